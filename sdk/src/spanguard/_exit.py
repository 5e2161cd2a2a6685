"""Flush spans when the process is told to stop with SIGTERM (as containers and CI runners do).

Python runs ``atexit`` handlers on a normal exit but not on SIGTERM, whose default action ends
the process at once: every span still queued would be lost. :func:`install_sigterm_flush` puts
in a handler — only when the app has none of its own and only from the main thread — that
flushes for at most ``SIGTERM_FLUSH_MILLIS`` and then lets SIGTERM take its default course, so
the exit status stays "terminated by SIGTERM". An app with its own SIGTERM handler keeps it
and should call :func:`spanguard.shutdown` there. ``configure(flush_on_sigterm=False)`` opts out;
:func:`spanguard.shutdown` takes the handler out again (when it is still the one in place).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from types import FrameType

from ._runtime import logger
from ._state import STATE

__all__ = ["SIGTERM_FLUSH_MILLIS", "install_sigterm_flush", "uninstall_sigterm_flush"]

SIGTERM_FLUSH_MILLIS = 5_000


def _flush_quietly(flush: Callable[[int], bool]) -> None:
    try:
        if not flush(SIGTERM_FLUSH_MILLIS):
            logger.warning("spanguard: not every span was exported before SIGTERM.")
    except Exception:  # never let telemetry change how the app stops
        logger.exception("spanguard: flushing spans on SIGTERM failed")


def install_sigterm_flush(flush: Callable[[int], bool]) -> bool:
    """Install the flushing SIGTERM handler once; True when it is (now or already) in place."""
    if STATE.sigterm_handler is not None:
        return True
    if threading.current_thread() is not threading.main_thread():
        return False
    try:
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return False

        def on_sigterm(signum: int, frame: FrameType | None) -> None:
            # Flush on another thread: the interrupted main thread may hold a lock the flush
            # needs (e.g. inside an explicit force_flush); joining with a timeout cannot hang.
            worker = threading.Thread(
                target=_flush_quietly, args=(flush,), name="spanguard-sigterm-flush", daemon=True
            )
            worker.start()
            worker.join(SIGTERM_FLUSH_MILLIS / 1000 + 1)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)

        signal.signal(signal.SIGTERM, on_sigterm)
    except (ValueError, OSError):  # no signals here (e.g. some embedded interpreters)
        return False
    STATE.sigterm_handler = on_sigterm
    return True


def uninstall_sigterm_flush() -> None:
    """Put SIGTERM's default action back if spanguard's handler is still the one in place."""
    handler, STATE.sigterm_handler = STATE.sigterm_handler, None
    if handler is None or threading.current_thread() is not threading.main_thread():
        return
    try:
        if signal.getsignal(signal.SIGTERM) is handler:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
    except (ValueError, OSError):
        pass
