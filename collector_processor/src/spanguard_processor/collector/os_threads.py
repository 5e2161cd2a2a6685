"""The processor's threads carry their names at the OS level too (Linux).

``top -H``, ``ps -L``, ``/proc/PID/task/*/comm`` and native profilers then show which part of
``spanguard serve`` uses the CPU — the span writer, the HTTP event loop, the decoders, the gRPC
workers — instead of a row of ``python`` threads (Python sets no OS thread names before 3.14).
``bench/bench_ingest.py`` reads them to split the server's CPU per span by part.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
import threading
from collections.abc import Callable
from contextlib import suppress
from functools import cache

__all__ = ["name_os_thread"]

_PR_SET_NAME = 15
_MAX_NAME = 15  # the kernel keeps 16 bytes, the last one a NUL


@cache
def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def name_os_thread(name: str | None = None) -> None:
    """Give the calling thread ``name`` (default: its Python name) at the OS level, cut to 15
    bytes; a no-op where the platform has no such name. Never raises."""
    prctl = _prctl()
    if prctl is None:
        return
    text = name if name is not None else threading.current_thread().name
    with suppress(OSError, ctypes.ArgumentError):
        prctl(_PR_SET_NAME, ctypes.c_char_p(text.encode("utf-8", "replace")[:_MAX_NAME]), 0, 0, 0)
