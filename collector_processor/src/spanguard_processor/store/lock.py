"""One writer per store: an OS-level lock on a file beside it, held while a store is open for
writing.

Two writers of one store would each remember different recent spans and batch ids, and the
second one's commits can kill the first's (``spanguard serve``'s writer met ``UNIQUE
constraint failed`` when ``spanguard ingest`` wrote the same store). So every
:class:`~spanguard_processor.store.span_store.SpanStore` opened for writing takes an exclusive
``flock`` on ``<store>.lock`` first; the kernel drops it when the process ends, however it
ends, so a crash never leaves a store locked. A second writer — another ``serve``, an
``ingest``, in this process or another — gets :class:`StoreLocked` naming the holder (its
process id and command, and for ``serve`` the OTLP/HTTP address it listens on, which
``ingest --via`` can send to). Readers (``traces export``, ``store check``) take no lock and
keep working on a live store (SQLite's WAL gives them a consistent snapshot).

The lock file stays after the writer ends (removing it would race with the next writer); its
text only describes the last holder and means nothing without the lock.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any

from spanguard.exceptions import InputError, TraceFormatError

__all__ = ["StoreLocked", "WriterLock", "lock_path"]


class StoreLocked(InputError):
    """The store is open for writing by another writer (named in the message)."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        holder: dict[str, Any] | None = None,
        **located: Any,
    ) -> None:
        super().__init__(message, file=file, **located)
        self.holder = holder or {}


def lock_path(store: Path) -> Path:
    """The lock file of ``store``: ``<store>.lock`` beside it."""
    return store.with_name(store.name + ".lock")


def _describe(holder: dict[str, Any]) -> str:
    pid = holder.get("pid")
    command = holder.get("command") or "a spanguard process"
    text = f"{command} (process {pid})" if pid else command
    url = holder.get("http")
    return f"{text}, listening on {url}" if url else text


def _read(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


class WriterLock:
    """The exclusive writer lock of one store, taken on creation (unless ``take`` is False);
    :meth:`release` (or the process ending) gives it back."""

    def __init__(self, store: Path, *, take: bool = True) -> None:
        self.path = lock_path(store)
        self.store = store
        self._fd: int | None = None
        if take:  # (a reader holds a lock it never takes)
            self._take(store)

    def _take(self, store: Path) -> None:
        try:
            store.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # worded as opening the store would say it
            reason = f"{exc.strerror}: {exc.filename}" if exc.filename else str(exc)
            raise TraceFormatError(f"cannot be created ({reason}).", file=str(store)) from None
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise InputError(
                f"cannot create the writer lock {self.path} ({exc.strerror}); "
                "the store's folder must be writable.",
                file=str(store),
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            holder = _read(self.path)
            raise StoreLocked(
                f"is being written by {_describe(holder)}; a store has one writer at a time. "
                "Stop that writer first, or send the spans to its OTLP receiver instead; "
                "reading the store (traces export, store check) works meanwhile.",
                file=str(store),
                holder=holder,
            ) from None
        self._fd = fd
        self.describe()

    def describe(self, command: str = "a spanguard process", **facts: Any) -> None:
        """Record who holds the lock (its process id, ``command``, and ``facts`` such as the
        OTLP/HTTP address, ``http``) for a writer refused later."""
        if self._fd is None:
            return
        text = json.dumps({"pid": os.getpid(), "command": command, **facts}).encode()
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, text, 0)

    def release(self) -> None:
        """Give the lock back (idempotent)."""
        if self._fd is not None:
            os.close(self._fd)  # closing the only descriptor drops the flock
            self._fd = None
