"""Read a span store's rows page by page, without SQLite: what ``store recover`` salvages when
SQLite cannot open the file (truncated, its schema or inner pages overwritten).

A span store is an SQLite database; its rows live in table b-tree *leaf* pages, which hold whole
records (a large body continues on a chain of overflow pages). :func:`scan_pages` reads every
page of the file — and of its write-ahead log, whose frames are newer versions of pages — and
parses every table-leaf cell it can, skipping what does not parse. No inner page, no schema and
no header beyond the page size is needed, so a store cut short keeps every record whose leaf
and overflow pages survive.

Which table a record comes from is told by its shape and by the checksum it carries:
``batches`` rows are (id, fmt TEXT, body BLOB, crc) and ``batch_traces`` rows are (batch_id,
groups BLOB, crc); the caller keeps only records whose CRC-32 matches, so a record read from a
stale or half-written page is never taken for data. Formats: https://sqlite.org/fileformat.html
(§1.6 b-tree pages, §2.1 record format, §4 WAL).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PageRecord", "scan_pages"]

_TABLE_LEAF = 0x0D
_WAL_MAGIC = (0x377F0682, 0x377F0683)
_WAL_HEADER, _FRAME_HEADER = 32, 24
_MAX_VALUES = 8  # span store rows have 3 or 4 columns


@dataclass(frozen=True, slots=True)
class PageRecord:
    """One table-leaf record: its rowid and its column values (None, int, float, str, bytes)."""

    rowid: int
    values: tuple[object, ...]


def _page_size(head: bytes, default: int) -> int:
    if len(head) >= 18:
        (size,) = struct.unpack_from(">H", head, 16)
        size = 65536 if size == 1 else size
        if 512 <= size <= 65536 and not size & (size - 1):
            return size
    return default


def _pages(path: Path, default_size: int) -> tuple[dict[int, bytes], int]:
    """Page number (from 1) → bytes: the file's whole pages, then the WAL's frames over them."""
    data = path.read_bytes()
    size = _page_size(data[:100], default_size)
    pages = {n + 1: data[n * size : (n + 1) * size] for n in range(len(data) // size)}
    wal = Path(f"{path}-wal")
    if wal.is_file():
        log = wal.read_bytes()
        if len(log) >= _WAL_HEADER and struct.unpack_from(">I", log, 0)[0] in _WAL_MAGIC:
            (size_in_wal,) = struct.unpack_from(">I", log, 8)
            if size_in_wal == size:
                step = _FRAME_HEADER + size
                for at in range(_WAL_HEADER, len(log) - step + 1, step):
                    (number,) = struct.unpack_from(">I", log, at)
                    if number:
                        pages[number] = log[at + _FRAME_HEADER : at + step]
    return pages, size


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = 0
    for i in range(8):
        byte = buf[pos + i]
        result = (result << 7) | (byte & 0x7F)
        if byte < 0x80:
            return result, pos + i + 1
    return (result << 8) | buf[pos + 8], pos + 9


def _payload(
    pages: Mapping[int, bytes], page: bytes, pos: int, total: int, usable: int
) -> bytes | None:
    """A cell's payload of ``total`` bytes starting at ``pos``, its overflow chain followed;
    None when a page of the chain is missing."""
    most = usable - 35
    if total <= most:
        return page[pos : pos + total]
    least = (usable - 12) * 32 // 255 - 23
    local = least + (total - least) % (usable - 4)
    local = local if local <= most else least
    parts = [page[pos : pos + local]]
    (following,) = struct.unpack_from(">I", page, pos + local)
    left, seen = total - local, set()
    while left > 0:
        chunk = pages.get(following)
        if chunk is None or following in seen:
            return None
        seen.add(following)
        parts.append(chunk[4 : 4 + min(left, usable - 4)])
        left -= usable - 4
        (following,) = struct.unpack_from(">I", chunk, 0)
    return b"".join(parts)


def _value(kind: int, record: bytes, at: int) -> tuple[object, int]:
    if kind == 0:
        return None, at
    if kind in (8, 9):
        return kind - 8, at
    if 1 <= kind <= 6:
        width = (0, 1, 2, 3, 4, 6, 8)[kind]
        return int.from_bytes(record[at : at + width], "big", signed=True), at + width
    if kind == 7:
        return struct.unpack_from(">d", record, at)[0], at + 8
    if kind >= 12:
        width = (kind - 12) // 2
        raw = record[at : at + width]
        if len(raw) != width:
            raise ValueError("a value past the record's end")
        return (raw if kind % 2 == 0 else raw.decode("utf-8", "replace")), at + width
    raise ValueError(f"serial type {kind}")


def _record(record: bytes) -> tuple[object, ...]:
    header, at = _varint(record, 0)
    kinds: list[int] = []
    while at < header:
        kind, at = _varint(record, at)
        kinds.append(kind)
        if len(kinds) > _MAX_VALUES:
            raise ValueError("more columns than a span store's table has")
    values, at = [], header
    for kind in kinds:
        value, at = _value(kind, record, at)
        values.append(value)
    return tuple(values)


def _leaf_records(
    pages: Mapping[int, bytes], number: int, page: bytes, usable: int
) -> Iterator[PageRecord]:
    start = 100 if number == 1 else 0
    if len(page) < start + 8 or page[start] != _TABLE_LEAF:
        return
    (cells,) = struct.unpack_from(">H", page, start + 3)
    for i in range(cells):
        try:
            (offset,) = struct.unpack_from(">H", page, start + 8 + 2 * i)
            total, at = _varint(page, offset)
            rowid, at = _varint(page, at)
            payload = _payload(pages, page, at, total, usable)
            if payload is not None:
                yield PageRecord(rowid, _record(payload))
        except (IndexError, ValueError, struct.error):
            continue  # a cell of a damaged page


def scan_pages(path: Path, default_page_size: int) -> Iterator[PageRecord]:
    """Every record of every table-leaf page of the SQLite file ``path`` (and its WAL), in
    page order; pages and cells that do not parse are skipped. A record may appear more than
    once (an older copy of a page); the caller checks and deduplicates."""
    pages, size = _pages(path, default_page_size)
    head = pages.get(1, b"")
    reserved = head[20] if len(head) > 20 and head[:16] == b"SQLite format 3\x00" else 0
    for number in sorted(pages):
        yield from _leaf_records(pages, number, pages[number], size - reserved)
