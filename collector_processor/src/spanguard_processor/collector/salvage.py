"""Check a span store in depth, and copy what is readable out of a damaged one.

* :func:`check_store` — ``PRAGMA integrity_check``, every batch against its checksum, and every
  index row against the spans its batch holds.
* :func:`recover_store` — reads the batches (the stored request bodies) of a damaged store one
  by one, skipping what SQLite or the decoders cannot read, re-derives their span index from
  the bodies themselves (the damaged index is not trusted) and writes them into a new store.
  A store whose SQLite header was overwritten is read through a copy with a rebuilt header
  (and, if its schema page was overwritten too, a new store's schema page).
  Every recovered trace is released (one without its root span is partial). Then every page
  of the file (and its WAL) is scanned without SQLite (:mod:`~..store.pagescan`) for batches
  SQLite could not reach — a store cut short or with inner pages overwritten keeps every batch
  whose pages survive, each checked against its CRC-32 — and the index rows that survive tell
  how many spans and traces were lost with the batches that did not.
"""

from __future__ import annotations

import shutil
import sqlite3
import struct
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from spanguard.exceptions import TraceFormatError

from ..ingest.batches import decode_stored
from ..ingest.spans import DecodedBatch
from ..store.opening import readonly_connection
from ..store.pagescan import scan_pages
from ..store.schema import PAGE_SIZE, SQLITE_MAGIC, DamagedStore, looks_like_store, unpack_groups
from ..store.schema import crc as checksum
from ..store.span_store import SpanStore

__all__ = ["Salvage", "StoreSummary", "check_store", "recover_store"]

_CHUNK_SPANS = 5000
_PROBE_LIMIT = 10_000  # ids tried one by one past an unreadable region when max(id) is unknown


@dataclass(frozen=True, slots=True)
class StoreSummary:
    """What a healthy store holds."""

    spans: int
    batches: int
    released: int
    pending: int
    without_rows: tuple[int, ...] = ()  # batches the file's index has no row for


def check_store(path: Path) -> StoreSummary:
    """Check ``path`` in depth; raises :class:`DamagedStore` naming the first problem found."""
    with SpanStore(path, readonly=True, verify_batches=True) as store:
        batches = store.check_index()
        released, pending = store.trace_counts()
        missing = tuple(store.batches_without_index_rows())
        return StoreSummary(store.span_count(), batches, released, pending, missing)


@dataclass
class Salvage:
    """What :func:`recover_store` copied, and what it could not read."""

    spans: int = 0
    batches: int = 0
    traces: int = 0
    indexed_spans: int | None = None  # spans the damaged store's index listed, if readable
    problems: list[str] = field(default_factory=list)
    lost_spans: int = 0  # of the batches not recovered, as their surviving index rows list
    lost_traces: int = 0  # traces of which those rows list spans and no batch was recovered
    copied: set[int] = field(default_factory=set, repr=False)  # the batch ids recovered
    trace_ids: set[str] = field(default_factory=set, repr=False)  # the traces recovered


def recover_store(source: Path, target: Path) -> Salvage:
    """Copy every readable batch of the store ``source`` into the new store ``target``."""
    if not source.is_file():
        raise TraceFormatError("does not exist.", file=str(source))
    if target.exists():
        raise TraceFormatError("already exists; recover into a new file.", file=str(target))
    salvage = Salvage()
    with tempfile.TemporaryDirectory(prefix="spanguard-recover-") as tmp:
        try:
            db: sqlite3.Connection | None = _open_source(source, Path(tmp), salvage)
        except DamagedStore as exc:  # the page scan below reads what SQLite cannot
            db = None
            salvage.problems.append(exc.problem)
        try:
            with SpanStore(target) as store:
                if db is not None:
                    _copy(db, store, salvage)
                _copy_scanned(source, store, salvage)
                salvage.traces = store.release_all()
        finally:
            if db is not None:
                db.close()
    if not salvage.batches:
        target.unlink(missing_ok=True)
        raise DamagedStore(_nothing(source, salvage), file=str(source))
    return salvage


def _nothing(source: Path, salvage: Salvage) -> str:
    size = source.stat().st_size
    if size < PAGE_SIZE:
        return (
            f"it is {size} bytes, less than one {PAGE_SIZE}-byte page: it was cut short "
            "before its first batch; nothing can be recovered"
        )
    first = f" ({salvage.problems[0]})" if salvage.problems else ""
    return f"no batch in it is readable{first}; nothing can be recovered"


def _copy_scanned(source: Path, store: SpanStore, salvage: Salvage) -> None:
    """Every intact batch the page scan finds that SQLite did not yield; then what the
    surviving index rows say was lost."""
    listed: dict[int, list[tuple[str, int]]] = {}
    pending: list[DecodedBatch] = []
    for record in scan_pages(source, PAGE_SIZE):
        values = record.values
        if len(values) == 4 and record.rowid not in salvage.copied:
            _, fmt, body, crc = values
            if isinstance(body, bytes) and isinstance(crc, int) and checksum(body) == crc:
                batch = _decoded(record.rowid, fmt, body, crc, salvage)
                if batch is not None:
                    _kept(record.rowid, batch, salvage)
                    pending.append(batch)
        elif len(values) == 3 and isinstance(values[1], bytes) and values[2] == checksum(values[1]):
            try:
                groups = unpack_groups(values[1])
            except ValueError:
                continue
            listed[record.rowid] = [(g.trace_id, g.span_count) for g in groups]
        if sum(batch.count for batch in pending) >= _CHUNK_SPANS:
            store.put_batches(pending)
            pending = []
    store.put_batches(pending)
    lost = [
        group
        for batch_id, groups in listed.items()
        if batch_id not in salvage.copied
        for group in groups
    ]
    salvage.lost_spans = sum(count for _, count in lost)
    salvage.lost_traces = len({trace_id for trace_id, _ in lost} - salvage.trace_ids)


def _kept(batch_id: int, batch: DecodedBatch, salvage: Salvage) -> None:
    salvage.copied.add(batch_id)
    salvage.batches += 1
    salvage.spans += batch.count
    salvage.trace_ids.update(group.trace_id for group in batch.traces)


def _open_source(source: Path, tmp: Path, salvage: Salvage) -> sqlite3.Connection:
    with source.open("rb") as handle:
        head = handle.read(len(SQLITE_MAGIC))
    if head == SQLITE_MAGIC:
        copy = source
    elif looks_like_store(source, head):
        copy = tmp / "source.db"
        shutil.copyfile(source, copy)
        wal = Path(f"{source}-wal")
        if wal.exists():
            shutil.copyfile(wal, Path(f"{copy}-wal"))
        _rebuild_header(copy, source)
        salvage.problems.append(
            "the SQLite header was overwritten; read through a copy with a rebuilt one"
        )
    else:
        raise TraceFormatError(
            "is not a spanguard span store (not a SQLite database).", file=str(source)
        )
    try:
        db = readonly_connection(copy)  # read-only media too
    except sqlite3.DatabaseError as exc:
        raise DamagedStore(
            f"its schema is unreadable ({exc}); its pages are read one by one instead",
            file=str(source),
        ) from None
    try:
        columns = [row[1] for row in db.execute("PRAGMA table_info(batches)")]
    except sqlite3.DatabaseError as exc:
        db.close()
        raise DamagedStore(
            f"its schema is unreadable ({exc}); its pages are read one by one instead",
            file=str(source),
        ) from None
    if "body" not in columns:
        db.close()
        raise DamagedStore(
            "its table of batches is missing; its pages are read one by one instead",
            file=str(source),
        )
    return db


def _rebuild_header(copy: Path, source: Path) -> None:
    """Write a plausible SQLite header over an overwritten one, trying each page size until
    the schema reads."""
    size = copy.stat().st_size
    wal = 2 if Path(f"{copy}-wal").exists() else 1
    for page_size in (4096, 1024, 2048, 8192, 16384, 32768, 65536, 512):
        if size % page_size or size < page_size:
            continue
        header = bytearray(100)
        header[:16] = SQLITE_MAGIC
        struct.pack_into(">H", header, 16, 1 if page_size == 65536 else page_size)
        header[18:24] = bytes([wal, wal, 0, 64, 32, 32])
        struct.pack_into(">IIII", header, 24, 1, size // page_size, 0, 0)  # counter, pages
        struct.pack_into(">II", header, 40, 1, 4)  # schema cookie, schema format 4
        struct.pack_into(">I", header, 56, 1)  # UTF-8
        struct.pack_into(">II", header, 92, 1, 3_045_000)  # version-valid-for, writer
        with copy.open("r+b") as handle:
            handle.write(header)
        try:
            with sqlite3.connect(f"{copy.resolve().as_uri()}?mode=ro", uri=True) as db:
                db.execute("SELECT name FROM sqlite_master").fetchall()
            return
        except sqlite3.DatabaseError:
            continue
    _transplant_first_page(copy, source, wal)


def _transplant_first_page(copy: Path, source: Path, wal: int) -> None:
    """The header and the schema page (page 1) are both overwritten: put a new store's page 1
    in their place. Every span store is created by the same statements on an empty database,
    so its tables always sit at the same root pages; page 1 holds nothing else."""
    with tempfile.TemporaryDirectory(prefix="spanguard-page1-") as tmp:
        fresh = Path(tmp) / "fresh.db"
        SpanStore(fresh).close()
        page = bytearray(fresh.read_bytes())
    (page_size,) = struct.unpack_from(">H", page, 16)
    page_size = 65536 if page_size == 1 else page_size
    size = copy.stat().st_size
    if size % page_size:
        raise DamagedStore(
            "its SQLite header and schema page are overwritten and its size is "
            "not a whole number of pages; nothing can be recovered",
            file=str(source),
        )
    first = page[:page_size]
    first[18:20] = bytes([wal, wal])
    struct.pack_into(">III", first, 28, size // page_size, 0, 0)  # pages; no freelist
    with copy.open("r+b") as handle:
        handle.write(first)
    try:
        with sqlite3.connect(f"{copy.resolve().as_uri()}?mode=ro", uri=True) as db:
            db.execute("SELECT count(*) FROM batches").fetchone()
    except sqlite3.DatabaseError as exc:
        raise DamagedStore(
            f"its SQLite header and schema page are overwritten, and a rebuilt "
            f"schema page does not read ({exc}); nothing can be recovered",
            file=str(source),
        ) from None


def _copy(db: sqlite3.Connection, store: SpanStore, salvage: Salvage) -> None:
    salvage.indexed_spans = _indexed_spans(db)
    pending: list[DecodedBatch] = []
    count = 0
    for batch_id, fmt, body, crc in _rows(db, salvage):
        batch = _decoded(batch_id, fmt, body, crc, salvage)
        if batch is None:
            continue
        _kept(int(str(batch_id)), batch, salvage)
        pending.append(batch)
        count += batch.count
        if count >= _CHUNK_SPANS:
            store.put_batches(pending)
            pending, count = [], 0
    store.put_batches(pending)


def _indexed_spans(db: sqlite3.Connection) -> int | None:
    """How many spans the store's index lists, if it is readable (stores of every version)."""
    try:
        tables = {
            name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        if "batch_traces" in tables:
            return sum(
                group.span_count
                for (blob,) in db.execute("SELECT groups FROM batch_traces")
                for group in unpack_groups(blob)
            )
        query = (
            "SELECT coalesce(sum(length(span_ids)), 0) / 8 FROM trace_batches"
            if "trace_batches" in tables
            else "SELECT count(*) FROM spans"
        )
        return int(db.execute(query).fetchone()[0])
    except (sqlite3.DatabaseError, TypeError, ValueError):
        return None


def _decoded(
    batch_id: object, fmt: object, body: object, crc: object, salvage: Salvage
) -> DecodedBatch | None:
    if not isinstance(body, bytes):
        salvage.problems.append(f"batch {batch_id}: its body is unreadable")
        return None
    if isinstance(crc, int) and checksum(body) != crc:
        salvage.problems.append(f"batch {batch_id}: does not match its checksum")
        return None
    try:
        batch = decode_stored(str(fmt), body)
    except (TraceFormatError, ValueError) as exc:
        salvage.problems.append(f"batch {batch_id}: cannot be decoded ({exc})")
        return None
    return batch


def _rows(db: sqlite3.Connection, salvage: Salvage) -> Iterator[tuple[object, ...]]:
    """Every readable batch row in id order, stepping over unreadable regions id by id."""
    crc = (
        "crc" if "crc" in [row[1] for row in db.execute("PRAGMA table_info(batches)")] else ("NULL")
    )
    scan = f"SELECT id, fmt, body, {crc} FROM batches WHERE id > ? ORDER BY id"
    one = f"SELECT id, fmt, body, {crc} FROM batches WHERE id = ?"
    try:
        highest: int | None = int(db.execute("SELECT max(id) FROM batches").fetchone()[0] or 0)
    except (sqlite3.DatabaseError, TypeError, ValueError):
        highest = None
    last = 0
    while True:
        try:
            for row in db.execute(scan, (last,)):
                last = int(row[0])
                yield row
            return
        except sqlite3.DatabaseError as exc:
            salvage.problems.append(f"batches after id {last}: {exc}")
        found = None
        end = highest if highest is not None else last + _PROBE_LIMIT
        for candidate in range(last + 1, end + 1):
            try:
                found = db.execute(one, (candidate,)).fetchone()
            except sqlite3.DatabaseError:
                continue
            if found is not None:
                break
        if found is None:
            return
        last = int(found[0])
        yield found
