"""The app in-process → agent traces, shared by ``spanguard run`` and ``cases run --app``:
:func:`.calls.call_app` calls it once per job, :mod:`.capture` keeps every span it emits,
:mod:`.recording` writes what a run evaluates onto the request span."""

from __future__ import annotations

from .calls import AppCall, Job, call_app

__all__ = ["AppCall", "Job", "call_app"]
