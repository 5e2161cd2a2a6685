"""The app over a suite's variants, in-process: :func:`.runner.run_app` calls it once per
variant and repeat, :mod:`.capture` keeps every span it emits, :mod:`.recording` writes what
the run evaluates onto the request span."""

from __future__ import annotations

from .runner import run_app

__all__ = ["run_app"]
