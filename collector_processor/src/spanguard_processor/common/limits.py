"""How much of an input spanguard reads at most, and reading within it.

* ``SPANGUARD_MAX_DOCUMENT_BYTES`` (default 64 MiB): a file read whole — a suite, a run
  result, a report, a price table, an OTLP-JSON document, an importer's source (YAML: at
  most 16 MiB, :data:`~.yamlio.MAX_YAML_BYTES`);
* ``SPANGUARD_MAX_LINE_BYTES`` (default 64 MiB): one line of a JSON-lines stream (agent
  traces, OTLP-JSON lines, cases, outputs).

A larger input is refused with :class:`~spanguard.exceptions.InputError` naming the file (and
line), its size and the limit, before more than the limit is held in memory.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import IO

from spanguard.exceptions import InputError

__all__ = [
    "DOCUMENT_LIMIT_ENV",
    "LINE_LIMIT_ENV",
    "bounded_lines",
    "document_limit",
    "line_limit",
    "numbered_reads",
    "read_bounded",
    "size_text",
]

DOCUMENT_LIMIT_ENV = "SPANGUARD_MAX_DOCUMENT_BYTES"
LINE_LIMIT_ENV = "SPANGUARD_MAX_LINE_BYTES"
# parsed JSON holds about three times its text (bytes, the decoded text, the objects): these
# keep any one input under ~250 MiB of memory
_DOCUMENT_DEFAULT = 64 << 20
_LINE_DEFAULT = 64 << 20


def _limit(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise InputError(f"{name}={text!r} is not a number of bytes.") from None
    if value <= 0:
        raise InputError(f"{name}={text!r} must be a positive number of bytes.")
    return value


def document_limit() -> int:
    """The most bytes a file read whole may hold (``SPANGUARD_MAX_DOCUMENT_BYTES``)."""
    return _limit(DOCUMENT_LIMIT_ENV, _DOCUMENT_DEFAULT)


def line_limit() -> int:
    """The most bytes one line of a JSON-lines stream may hold (``SPANGUARD_MAX_LINE_BYTES``)."""
    return _limit(LINE_LIMIT_ENV, _LINE_DEFAULT)


def size_text(size: int) -> str:
    """``268435456`` → ``256 MiB``."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift:
            return f"{size / (1 << shift):.1f} {unit}".replace(".0 ", " ")
    return f"{size} bytes"


def read_bounded(
    stream: IO[bytes], name: str, what: str = "the document", error: type[InputError] = InputError
) -> bytes:
    """All of ``stream`` (decompressed, if it is), refused past :func:`document_limit`."""
    limit = document_limit()
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise error(
            f"{what} is larger than {size_text(limit)}, the limit for a file read "
            f"whole (set {DOCUMENT_LIMIT_ENV} to raise it).",
            file=name,
        )
    return data


def bounded_lines(
    stream: IO[bytes], name: str, error: type[InputError] = InputError
) -> Iterator[bytes]:
    """The lines of ``stream``; a line longer than :func:`line_limit` raises ``error`` naming
    the file and line, having held at most the limit in memory."""
    limit = line_limit()
    for number, line, whole in numbered_reads(stream, limit):
        if not whole:
            raise error(
                f"is longer than {size_text(limit)}, the limit for one line (set "
                f"{LINE_LIMIT_ENV} to raise it).",
                file=name,
                line=number,
            )
        yield line


def numbered_reads(stream: IO[bytes], cap: int) -> Iterator[tuple[int, bytes, bool]]:
    """(line number, its first ``cap`` + 1 bytes at most, whether that is the whole line).

    A caller that goes on past a line that is not whole reads its rest from ``stream`` itself
    (or not: the next read then starts inside it)."""
    number = 0
    while True:
        line = stream.readline(cap + 1)
        if not line:
            return
        number += 1
        yield number, line, len(line) <= cap or line.endswith(b"\n")
