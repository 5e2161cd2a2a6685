"""The app over a suite's variants, in-process: :func:`.runner.run_app` calls it once per
variant and repeat through the shared harness (``spanguard_processor.harness``) and reads
each call's spans as observations."""

from __future__ import annotations

from .runner import run_app

__all__ = ["run_app"]
