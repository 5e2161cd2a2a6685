"""The processor's threads carry their names at the OS level too (Linux), and its idle writer
gives free memory back to the OS (glibc's ``malloc_trim``: :func:`return_free_memory`).

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

__all__ = ["name_os_thread", "return_free_memory"]

_PR_SET_NAME = 15
_MAX_NAME = 15  # the kernel keeps 16 bytes, the last one a NUL


@cache
def _libc(function: str) -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return getattr(
            ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True), function
        )
    except (OSError, AttributeError):  # e.g. musl has no malloc_trim
        return None


def return_free_memory() -> None:
    """Give the free memory of every malloc arena back to the OS (glibc's ``malloc_trim(0)``:
    after a burst, freed memory otherwise stays in the process); a no-op elsewhere."""
    trim = _libc("malloc_trim")
    if trim is not None:
        trim(0)


def name_os_thread(name: str | None = None) -> None:
    """Give the calling thread ``name`` (default: its Python name) at the OS level, cut to 15
    bytes; a no-op where the platform has no such name. Never raises."""
    prctl = _libc("prctl")
    if prctl is None:
        return
    text = name if name is not None else threading.current_thread().name
    with suppress(OSError, ctypes.ArgumentError):
        prctl(_PR_SET_NAME, ctypes.c_char_p(text.encode("utf-8", "replace")[:_MAX_NAME]), 0, 0, 0)
