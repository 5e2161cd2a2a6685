"""Strict, deterministic JSON and JSONL reading and writing.

:func:`parse_json` is the one JSON parser every command reads input with: orjson, which bounds
nesting (1,024 levels) and refuses numbers beyond a double and NaN/Infinity, plus a size
limit; whatever the input, it raises only ``json.JSONDecodeError`` (a ``ValueError``) — never
``RecursionError`` or the interpreter's integer-length ``ValueError``. Readers name the file
and line of every problem; writers never emit NaN or Infinity, always
write UTF-8 with LF line ends, and replace the target atomically so a crash never leaves half
a file behind (:mod:`.writes`: every step checked, all of a command's outputs or none).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any, cast

from spanguard.exceptions import InputError, TraceFormatError

from ._json import MAX_JSON_BYTES, parse_json
from .limits import bounded_lines
from .writes import write_chunks_atomic, write_text_atomic

__all__ = [
    "MAX_JSON_BYTES",
    "dumps_line",
    "iter_jsonl",
    "json_lines",
    "open_binary",
    "parse_json",
    "write_jsonl",
    "write_text_atomic",
]


def dumps_line(obj: Any) -> str:
    """One JSON line: UTF-8 text, key order as given, no NaN (raises ValueError instead)."""
    return json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def open_binary(path: Path) -> IO[bytes]:
    """Open a file for reading bytes, decompressing ``.gz`` files transparently."""
    if path.suffix == ".gz":
        return cast(IO[bytes], gzip.open(path, "rb"))
    return path.open("rb")


def iter_jsonl(path: Path, error: type[InputError] = TraceFormatError) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for every non-blank line; a UTF-8 BOM is ignored.

    Raises ``error`` naming the file and line for invalid UTF-8 or invalid JSON.
    """
    name = str(path)
    try:
        stream = open_binary(path)
    except OSError as exc:
        raise error(f"cannot be read: {exc.strerror or exc}.", file=name) from None
    with stream:
        yield from json_lines(stream, name, error)


def json_lines(
    lines: Iterable[bytes], name: str, error: type[InputError] = TraceFormatError
) -> Iterator[tuple[int, Any]]:
    """:func:`iter_jsonl` over lines already open (``name`` is the file errors name); a stream
    is read a line at a time, each within the line limit (:mod:`.limits`)."""
    if hasattr(lines, "readline"):
        lines = bounded_lines(cast(IO[bytes], lines), name, error)
    for number, raw in enumerate(lines, start=1):
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise error(
                f"is not valid UTF-8 (byte {exc.start}); re-encode the file as UTF-8.",
                file=name,
                line=number,
            ) from None
        if not text.strip():
            continue
        try:
            value = parse_json(text)
        except json.JSONDecodeError as exc:
            raise error(
                f"is not valid JSON: {exc.msg} (column {exc.colno}).", file=name, line=number
            ) from None
        yield number, value


def write_jsonl(
    path: Path, rows: Iterable[Any], *, check: Callable[[int], None] | None = None
) -> int:
    """Write one JSON line per row, atomically, as the rows come (memory holds about a
    64 KB of lines, not the file); returns the number of rows written. ``check`` is called
    with that number before the file is replaced: if it raises, nothing is."""
    count = 0

    def lines() -> Iterator[bytes]:
        nonlocal count
        for row in rows:
            count += 1
            yield (dumps_line(row) + "\n").encode("utf-8")

    write_chunks_atomic(path, lines(), check=None if check is None else lambda: check(count))
    return count
