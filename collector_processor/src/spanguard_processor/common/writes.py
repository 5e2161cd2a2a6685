"""Writing outputs: atomic, complete and checked, and all of a command's outputs or none.

:func:`write_text_atomic` writes a file through a temporary file beside it (written, flushed,
fsynced and closed, every step checked) and an atomic rename, so a reader never sees half a
file. Any ``OSError`` on the way (no space left, I/O error, read-only file system, permission
denied) becomes :class:`WriteFailed` — "could not write PATH: no space left on device." —
and the temporary file is removed. A target that exists and is not a regular file (a device
such as ``/dev/null`` or ``/dev/full``, a named pipe) is written in place, never replaced, and
a device that refuses the bytes is an error, not a success.

Inside :func:`output_transaction` (the ``spanguard`` command opens one around every command)
each replaced file is kept (a hard link) and each new file noted, so a command that fails
half-way through writing its reports puts every earlier output back as it was: all or none.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from spanguard.exceptions import InputError

__all__ = [
    "Transaction",
    "WriteFailed",
    "append_text",
    "output_transaction",
    "will_create",
    "write_chunks_atomic",
    "write_text_atomic",
]


class WriteFailed(InputError):
    """An output could not be written: "could not write PATH: no space left on device." """

    def __init__(self, path: Path | str, reason: OSError | str) -> None:
        self.path = str(path)
        text = reason if isinstance(reason, str) else _reason(reason)
        super().__init__(f"could not write {path}: {text}.")


def _reason(exc: OSError) -> str:
    if exc.errno is not None and exc.errno in errno.errorcode:
        return os.strerror(exc.errno).lower()
    return str(exc.strerror or exc).lower()


def _put_back(path: Path, undo: Callable[[], object] | None) -> None:
    """Runs ``undo``, or with none removes ``path``; an OSError is passed over (best effort)."""
    with contextlib.suppress(OSError):
        if undo is None:
            path.unlink(missing_ok=True)
        else:
            undo()


@dataclass
class Transaction:
    """What the running command changed: files it replaced (kept as hard links until the
    command ends), files it created, and files it appended to (their old length)."""

    backups: dict[Path, Path | None] = field(default_factory=dict)
    lengths: dict[Path, int | None] = field(default_factory=dict)

    def before_replace(self, path: Path) -> None:
        """Keep ``path``'s current content (if any) the first time the command replaces it."""
        if path in self.backups:
            return
        if not path.exists():
            self.backups[path] = None
            return
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".keep", dir=path.parent)
        os.close(fd)
        backup = Path(name)
        try:
            backup.unlink()
            os.link(path, backup)
        except OSError as exc:
            backup.unlink(missing_ok=True)
            raise WriteFailed(path, exc) from None
        self.backups[path] = backup

    def before_append(self, path: Path) -> None:
        if path not in self.lengths:
            self.lengths[path] = path.stat().st_size if path.exists() else None

    def rollback(self) -> None:
        """Every output back as it was before the command (best effort, never raises)."""
        for path, length in self.lengths.items():
            _put_back(path, None if length is None else partial(os.truncate, path, length))
        for path, backup in self.backups.items():
            _put_back(path, None if backup is None else partial(os.replace, backup, path))

    def commit(self) -> None:
        for backup in self.backups.values():
            if backup is not None:
                with contextlib.suppress(OSError):
                    backup.unlink()


_CURRENT: ContextVar[Transaction | None] = ContextVar("spanguard_output_transaction", default=None)


@contextlib.contextmanager
def output_transaction(*, keep: tuple[type[BaseException], ...] = ()) -> Iterator[Transaction]:
    """Outputs written inside are committed together: when the block raises anything but an
    exception of a ``keep`` type, every file written in it is put back as it was."""
    transaction = Transaction()
    token = _CURRENT.set(transaction)
    try:
        yield transaction
    except keep:
        transaction.commit()
        raise
    except BaseException:
        transaction.rollback()
        raise
    else:
        transaction.commit()
    finally:
        _CURRENT.reset(token)


def will_create(*paths: Path) -> None:
    """Note files the running command is about to create some other way (a SQLite store):
    when the command fails, those that did not exist before are removed."""
    transaction = _CURRENT.get()
    if transaction is None:
        return
    for path in paths:
        if path not in transaction.backups and not os.path.lexists(path):
            transaction.backups[path] = None


def _is_special(path: Path) -> bool:
    """An existing target that is not a regular file (a device, a pipe): written in place."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _write_fd(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _sync(fd: int) -> None:
    try:
        os.fsync(fd)
    except OSError as exc:  # a pipe or a terminal cannot be synced; that is no failure
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EROFS):
            raise


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` as UTF-8 to ``path`` through a temporary file and an atomic rename.

    Raises :class:`WriteFailed` (and leaves nothing behind) when any step fails."""
    write_chunks_atomic(path, [text.encode("utf-8")])


_CHUNK = 1 << 16  # bytes gathered before each write of :func:`write_chunks_atomic`


def write_chunks_atomic(
    path: Path, chunks: Iterable[bytes], *, check: Callable[[], None] | None = None
) -> None:
    """Write ``chunks`` to ``path`` as they come (memory holds about 64 KB of them, not
    the file) through a temporary file and an atomic rename, as :func:`write_text_atomic`.
    ``check`` runs after the last chunk, before the rename: if it (or the iteration) raises,
    nothing is replaced and the temporary file is removed."""
    path = Path(path)
    if _is_special(path):
        _write_in_place(path, _gathered(chunks), check)
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise WriteFailed(path, exc) from None
    try:
        try:
            os.fchmod(fd, _mode(path))
            for data in _gathered(chunks):
                _write_fd(fd, data)
            _sync(fd)
        finally:
            os.close(fd)
        if check is not None:
            check()
        transaction = _CURRENT.get()
        if transaction is not None:
            transaction.before_replace(path)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise WriteFailed(path, exc) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _gathered(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """``chunks`` joined into writes of about :data:`_CHUNK` bytes."""
    pending: list[bytes] = []
    size = 0
    for chunk in chunks:
        pending.append(chunk)
        size += len(chunk)
        if size >= _CHUNK:
            yield b"".join(pending)
            pending, size = [], 0
    if pending:
        yield b"".join(pending)


def _mode(path: Path) -> int:
    """The permissions the output gets: those of the file it replaces, else what a plain
    ``open()`` would give (0666 less the umask), not the temporary file's 0600."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _write_in_place(
    path: Path, chunks: Iterable[bytes], check: Callable[[], None] | None = None
) -> None:
    try:
        fd = os.open(path, os.O_WRONLY)
        try:
            for data in chunks:
                _write_fd(fd, data)
            _sync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise WriteFailed(path, exc) from None
    if check is not None:
        check()


def append_text(path: Path, text: str) -> None:
    """Append ``text`` to ``path`` (created if missing), synced; a failure truncates the
    file back to its old length and raises :class:`WriteFailed`."""
    path = Path(path)
    transaction = _CURRENT.get()
    if transaction is not None:
        transaction.before_append(path)
    before = path.stat().st_size if path.exists() else None
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            _write_fd(fd, text.encode("utf-8"))
            _sync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            if before is None:
                path.unlink(missing_ok=True)
            else:
                os.truncate(path, before)
        raise WriteFailed(path, exc) from None
