"""Damaged, foreign and newer stores: refused on open, never written to, never a traceback.

The measured case: random 512-byte overwrites of a 300-trace store. Before, ``serve`` started on
such a store and acknowledged writes, ``traces export`` died with a ``TypeError`` or
``sqlite3.DatabaseError`` traceback, and a store whose header was overwritten was reported as
a protobuf length error.
"""

from __future__ import annotations

import random
import re
import shutil
import sqlite3
import zlib
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan

from spanguard_processor.cli import cli
from spanguard_processor.collector.server import ProcessorServer, ServerConfig
from spanguard_processor.ingest.otlp_proto import decode_request
from spanguard_processor.store.schema import PAGE_SIZE
from spanguard_processor.store.span_store import SCHEMA_VERSION, DamagedStore, SpanStore
from tests.agent_app import SPANS_PER_REQUEST, in_memory_spans

TRACES = 300
DAMAGES = 20
SEED = 20261201
DATA = Path(__file__).parents[1] / "data" / "otel"


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("healthy") / "spans.db"
    spans = in_memory_spans(TRACES).get_finished_spans()
    with SpanStore(path) as store:
        for start in range(0, len(spans), SPANS_PER_REQUEST):
            store.put_batches(
                [decode_request(encode_spans(spans[start : start + SPANS_PER_REQUEST]))]
            )
        store.release_all()
    return path


def run(*args: str) -> Result:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code in (0, 2), (args, result.output, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    return result


def export(store: Path, out: Path, *extra: str) -> Result:
    return run("traces", "export", "--store", str(store), "-o", str(out), *extra)


def damage(
    source: Path, target: Path, rng: random.Random, offset: int | None = None, size: int = 512
) -> None:
    data = bytearray(source.read_bytes())
    at = rng.randrange(len(data) - size) if offset is None else offset
    data[at : at + size] = rng.randbytes(size)
    target.write_bytes(bytes(data))


@pytest.mark.slow
def test_twenty_random_damages_are_refused_naming_the_file_and_never_written_to(
    healthy: Path, tmp_path: Path
) -> None:
    rng = random.Random(SEED)
    original = tmp_path / "original.jsonl"
    assert export(healthy, original).exit_code == 0
    spans_file = DATA / "python_otlp_json_file_exporter.jsonl"
    outcomes = {"refused": 0, "harmless": 0, "salvaged": 0}
    for trial in range(DAMAGES):
        store = tmp_path / f"damaged-{trial}.db"
        # one trial overwrites the header; the others land anywhere
        damage(healthy, store, rng, offset=0 if trial == 0 else None)
        before = store.read_bytes()
        checked = run("store", "check", str(store))
        out = tmp_path / f"out-{trial}.jsonl"
        exported = export(store, out)
        if checked.exit_code == 0:  # the bytes hit unused space: nothing readable changed
            assert exported.exit_code == 0 and out.read_bytes() == original.read_bytes()
            outcomes["harmless"] += 1
            continue
        outcomes["refused"] += 1
        assert f"{store}: is a damaged span store" in checked.output
        assert exported.exit_code == 2 and f"{store}: is a damaged span store" in exported.output
        ingested = run("ingest", str(spans_file), "--store", str(store))
        assert ingested.exit_code == 2 and f"{store}: is a damaged span store" in ingested.output
        served = run("serve", "--store", str(store), "--grpc-port", "0", "--http-port", "0")
        assert served.exit_code == 2
        assert f"Error: --store: {store}: is a damaged span store" in served.output
        assert "listening" not in served.output
        assert store.read_bytes() == before, "a damaged store was written to"
        assert not Path(f"{store}-wal").exists()
        skipped = export(store, out, "--skip-bad")  # 0 with a count, or 2 when unreadable
        assert skipped.exit_code == 0 or f"{store}: is a damaged span store" in skipped.output
        recovered = tmp_path / f"recovered-{trial}.db"
        salvage = run("store", "recover", str(store), str(recovered))
        assert salvage.exit_code == 0, salvage.output
        assert run("store", "check", str(recovered)).exit_code == 0
        rows = tmp_path / f"recovered-{trial}.jsonl"
        assert export(recovered, rows).exit_code == 0
        kept = rows.read_text().splitlines()
        assert set(kept) <= set(original.read_text().splitlines())
        # a 512-byte damage makes at most a page or two unreadable: a 16 KiB page of the
        # batches table holds up to six of these small (5-span) bodies
        assert len(kept) >= TRACES - 6, "a 512-byte damage lost more than six stored bodies"
        outcomes["salvaged"] += 1
    assert outcomes["refused"] + outcomes["harmless"] == DAMAGES
    assert outcomes["refused"] >= DAMAGES // 2
    assert outcomes["salvaged"] == outcomes["refused"]


@pytest.mark.parametrize("size", [100, PAGE_SIZE])  # the SQLite header; the whole schema page
def test_an_overwritten_header_is_reported_as_a_damaged_store_and_salvaged_whole(
    healthy: Path, tmp_path: Path, size: int
) -> None:
    store = tmp_path / "spans.db"
    damage(healthy, store, random.Random(1), offset=0, size=size)
    for args in (
        ["traces", "export", "--store", str(store), "-o", str(tmp_path / "o.jsonl")],
        ["ingest", str(DATA / "python_otlp_json_file_exporter.jsonl"), "--store", str(store)],
    ):
        result = run(*args)
        assert result.exit_code == 2
        assert f"{store}: is a damaged span store (its SQLite header is overwritten)" in (
            result.output
        )
        assert "protobuf" not in result.output
    recovered = tmp_path / "recovered.db"
    result = run("store", "recover", str(store), str(recovered))
    assert result.exit_code == 0
    spans = TRACES * SPANS_PER_REQUEST
    assert f"recovered {spans} span(s) of the {spans} its index listed" in result.output
    assert "header was overwritten" in result.output


@pytest.mark.slow
@pytest.mark.parametrize("table", ["batch_traces", "releases"])
def test_forged_index_blobs_are_refused_or_harmless_never_a_traceback(
    healthy: Path, tmp_path: Path, table: str
) -> None:
    """Index blobs with random bytes flipped and their CRC-32 made to match again (what no
    writer produces: it gets past the checksum to the unpacking and the read-time checks)."""
    rng = random.Random(SEED)
    key, column = ("batch_id", "groups") if table == "batch_traces" else ("id", "trace_ids")
    exits = []
    for trial in range(DAMAGES):
        store = tmp_path / f"forged-{table}-{trial}.db"
        shutil.copy(healthy, store)
        with sqlite3.connect(store) as db:
            row_id, blob = db.execute(
                f"SELECT {key}, {column} FROM {table} ORDER BY random() LIMIT 1"
            ).fetchone()
            forged = bytearray(blob)
            for _ in range(1 + rng.randrange(3)):
                forged[rng.randrange(len(forged))] ^= 1 << rng.randrange(8)
            db.execute(
                f"UPDATE {table} SET {column} = ?, crc = ? WHERE {key} = ?",
                (bytes(forged), zlib.crc32(forged), row_id),
            )
        result = export(store, tmp_path / f"forged-{trial}.jsonl")  # no traceback, 0 or 2
        exits.append(result.exit_code)
        if result.exit_code == 2:
            assert f"{store}: is a damaged span store" in result.output
    if table == "batch_traces":  # span ids or counts that the batches do not bear out
        assert exits.count(2) >= DAMAGES // 2, exits
    else:  # another trace id reads as released, the real one as pending: nothing to refuse
        assert exits == [0] * DAMAGES, exits


def test_export_skip_bad_leaves_out_and_counts_the_unreadable_trace(
    healthy: Path, tmp_path: Path
) -> None:
    store = tmp_path / "spans.db"
    shutil.copy(healthy, store)
    with sqlite3.connect(store) as db:  # a bit flip inside one stored body, structure intact
        body = db.execute("SELECT body FROM batches WHERE id = 7").fetchone()[0]
        db.execute(
            "UPDATE batches SET body = ? WHERE id = 7",
            (body[:40] + bytes([body[40] ^ 0x55]) + body[41:],),
        )
    assert run("store", "check", str(store)).exit_code == 2
    result = export(store, tmp_path / "all.jsonl")
    assert result.exit_code == 2
    assert f"{store}: is a damaged span store (batch 7 does not match its checksum)" in (
        result.output
    )
    result = export(store, tmp_path / "all.jsonl", "--skip-bad")
    assert result.exit_code == 0
    assert f"wrote {TRACES - 1} agent record(s)" in result.output
    assert "skipped 1 unreadable trace(s)" in result.output and "batch 7" in result.output


def test_export_skip_bad_leaves_out_a_damaged_index_row(healthy: Path, tmp_path: Path) -> None:
    store = tmp_path / "spans.db"
    shutil.copy(healthy, store)
    with sqlite3.connect(store) as db:  # one request's index row no longer matches its CRC-32
        db.execute("UPDATE batch_traces SET crc = crc + 1 WHERE batch_id = 7")
    result = export(store, tmp_path / "all.jsonl")
    assert result.exit_code == 2
    assert (
        f"{store}: is a damaged span store (row 7 of table batch_traces does not match its checksum"
    ) in result.output
    result = export(store, tmp_path / "all.jsonl", "--skip-bad")
    assert result.exit_code == 0
    assert f"wrote {TRACES - 1} agent record(s)" in result.output  # the trace batch 7 held
    assert "skipped 1 unreadable" in result.output and "row 7 of table batch_traces" in (
        result.output
    )


def test_a_foreign_sqlite_database_is_refused_and_left_untouched(tmp_path: Path) -> None:
    foreign = tmp_path / "app.db"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE users (name TEXT)")
    before = foreign.read_bytes()
    result = run(
        "ingest", str(DATA / "python_otlp_json_file_exporter.jsonl"), "--store", str(foreign)
    )
    assert result.exit_code == 2
    assert f"{foreign}: is a SQLite database but not a spanguard span store" in result.output
    assert foreign.read_bytes() == before


def test_a_store_from_a_newer_spanguard_is_refused(healthy: Path, tmp_path: Path) -> None:
    store = tmp_path / "spans.db"
    shutil.copy(healthy, store)
    with sqlite3.connect(store) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    result = export(store, tmp_path / "o.jsonl")
    assert result.exit_code == 2 and "was written by a newer spanguard" in result.output


# The schema of store versions 0 and 1 (one index row per span), as they wrote it.
_VERSION1_SCHEMA = """
CREATE TABLE batches (id INTEGER PRIMARY KEY, fmt TEXT NOT NULL, body BLOB NOT NULL{crc});
CREATE TABLE spans (trace_id TEXT NOT NULL, span_id TEXT NOT NULL,
    parent_span_id TEXT NOT NULL, start_ns INTEGER NOT NULL, annotation INTEGER NOT NULL,
    batch_id INTEGER NOT NULL, position INTEGER NOT NULL,
    PRIMARY KEY (trace_id, span_id)) WITHOUT ROWID;
CREATE INDEX spans_annotations ON spans (annotation) WHERE annotation = 1;
CREATE TABLE traces (trace_id TEXT PRIMARY KEY, released INTEGER NOT NULL DEFAULT 0,
    start_ns INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
CREATE INDEX traces_pending ON traces (released) WHERE released = 0;
"""


_VERSION2_SCHEMA = """
CREATE TABLE batches (id INTEGER PRIMARY KEY, fmt TEXT NOT NULL, body BLOB NOT NULL,
    crc INTEGER);
CREATE TABLE trace_batches (trace_id TEXT NOT NULL, batch_id INTEGER NOT NULL,
    span_ids BLOB NOT NULL, root INTEGER NOT NULL, annotations INTEGER NOT NULL,
    PRIMARY KEY (trace_id, batch_id)) WITHOUT ROWID;
CREATE INDEX trace_batches_annotations ON trace_batches (annotations) WHERE annotations > 0;
CREATE TABLE traces (trace_id TEXT PRIMARY KEY, released INTEGER NOT NULL DEFAULT 0,
    start_ns INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
"""


def version2_store(path: Path, spans: Sequence[ReadableSpan], pending: int = 0) -> None:
    """A store as spanguard wrote it at store version 2 (rows per trace); the last
    ``pending`` traces not released."""
    with sqlite3.connect(path) as db:
        db.executescript(_VERSION2_SCHEMA)
        for start in range(0, len(spans), SPANS_PER_REQUEST):
            batch = decode_request(encode_spans(spans[start : start + SPANS_PER_REQUEST]))
            batch_id = db.execute(
                "INSERT INTO batches (fmt, body, crc) VALUES (?, ?, ?)",
                (batch.fmt, batch.body, zlib.crc32(batch.body)),
            ).lastrowid
            for group in batch.traces:
                db.execute(
                    "INSERT INTO trace_batches VALUES (?, ?, ?, ?, ?)",
                    (group.trace_id, batch_id, group.span_ids, group.root, group.annotations),
                )
                db.execute(
                    "INSERT INTO traces VALUES (?, 1, ?) ON CONFLICT DO UPDATE SET "
                    "start_ns = min(start_ns, excluded.start_ns)",
                    (group.trace_id, group.start_ns),
                )
        if pending:
            db.execute(
                "UPDATE traces SET released = 0 WHERE trace_id IN (SELECT trace_id FROM"
                f" traces ORDER BY start_ns DESC LIMIT {pending})"
            )
        db.execute("PRAGMA user_version = 2")


def old_store(path: Path, spans: Sequence[ReadableSpan], version: int) -> None:
    """A store as spanguard wrote it at store ``version`` (0, 1 or 2), every trace released."""
    if version == 2:
        version2_store(path, spans)
        return
    with sqlite3.connect(path) as db:
        db.executescript(_VERSION1_SCHEMA.format(crc=", crc INTEGER" if version else ""))
        for start in range(0, len(spans), SPANS_PER_REQUEST):
            batch = decode_request(encode_spans(spans[start : start + SPANS_PER_REQUEST]))
            columns = (
                ("fmt, body, crc", (batch.fmt, batch.body, zlib.crc32(batch.body)))
                if (version)
                else ("fmt, body", (batch.fmt, batch.body))
            )
            batch_id = db.execute(
                f"INSERT INTO batches ({columns[0]}) VALUES ({', '.join('?' * len(columns[1]))})",
                columns[1],
            ).lastrowid
            db.executemany(
                "INSERT INTO spans VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(*span[:5], batch_id, span[5]) for span in batch.spans],
            )
            for span in batch.spans:
                db.execute(
                    "INSERT INTO traces VALUES (?, 1, ?) ON CONFLICT DO UPDATE SET "
                    "start_ns = min(start_ns, excluded.start_ns)",
                    (span.trace_id, span.start_ns),
                )
        db.execute(f"PRAGMA user_version = {version}")


@pytest.mark.parametrize("version", [0, 1, 2])
def test_an_older_store_reads_the_same_and_is_upgraded_when_opened_for_writing(
    tmp_path: Path, version: int
) -> None:
    current = tmp_path / "current.db"
    spans = in_memory_spans(12).get_finished_spans()
    with SpanStore(current) as db:
        for start in range(0, len(spans), SPANS_PER_REQUEST):
            db.put_batches([decode_request(encode_spans(spans[start : start + SPANS_PER_REQUEST]))])
        db.release_all()
    assert export(current, tmp_path / "current.jsonl").exit_code == 0
    store = tmp_path / "old.db"
    old_store(store, spans, version)
    before = store.read_bytes()
    # read-only: read through an index built in memory; the file is not touched
    assert export(store, tmp_path / "read.jsonl").exit_code == 0
    assert store.read_bytes() == before
    assert (tmp_path / "read.jsonl").read_bytes() == (tmp_path / "current.jsonl").read_bytes()
    SpanStore(store).close()  # serve / ingest: upgraded in place
    with sqlite3.connect(store) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert db.execute("SELECT count(*) FROM batches WHERE crc IS NULL").fetchone()[0] == 0
        assert (
            db.execute(
                "SELECT count(*) FROM sqlite_master WHERE name IN"
                " ('spans', 'trace_batches', 'traces')"
            ).fetchone()[0]
            == 0
        )
    with SpanStore(store, readonly=True) as db:
        assert db.span_count() == len(spans)
    assert run("store", "check", str(store)).exit_code == 0
    assert export(store, tmp_path / "upgraded.jsonl").exit_code == 0
    assert (tmp_path / "upgraded.jsonl").read_bytes() == (tmp_path / "current.jsonl").read_bytes()


def test_a_version2_store_keeps_its_pending_traces_through_the_upgrade(tmp_path: Path) -> None:
    store = tmp_path / "v2.db"
    spans = in_memory_spans(6).get_finished_spans()
    version2_store(store, spans, pending=2)
    with SpanStore(store, readonly=True) as db:
        assert db.trace_counts() == (4, 2)
        pending = sorted(db.pending_groups())
        ids = db.span_ids()
    with SpanStore(store) as db:  # upgraded
        assert db.trace_counts() == (4, 2)
        assert sorted(db.pending_groups()) == pending
        assert db.span_ids() == ids
    with SpanStore(store) as db:  # the next writer sees the same
        db.mark_released(sorted({group.trace_id for group in pending}))
        assert db.trace_counts() == (6, 0)


def test_an_unwritable_store_is_refused_at_start(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    store = tmp_path / "file" / "spans.db"  # (a read-only file would not stop root)
    result = run("serve", "--store", str(store), "--grpc-port", "0", "--http-port", "0")
    assert result.exit_code == 2
    assert f"Error: --store: {store}: cannot be created (File exists: {store.parent})" in (
        result.output
    )


def test_closing_a_store_checkpoints_its_wal(tmp_path: Path) -> None:
    store = tmp_path / "spans.db"
    with SpanStore(store) as db:
        db.put_batches([decode_request(encode_spans(in_memory_spans(3).get_finished_spans()))])
        assert Path(f"{store}-wal").stat().st_size > 0
    wal = Path(f"{store}-wal")
    assert not wal.exists() or wal.stat().st_size == 0


_ONE_INDEX_ROW = "WHERE batch_id = (SELECT min(batch_id) FROM batch_traces)"
_ONE_RELEASE = "WHERE id = (SELECT min(id) FROM releases)"


@pytest.mark.parametrize(
    ("update", "problem"),
    [
        (
            f"UPDATE batch_traces SET groups = substr(groups, 2) {_ONE_INDEX_ROW}",
            "row 1 of table batch_traces does not match its checksum",
        ),
        (
            f"UPDATE batch_traces SET batch_id = 99999 {_ONE_INDEX_ROW}",
            "a row of table batch_traces is malformed (99999)",
        ),
        # well-formed for SQLite and checksummed, but no writer packs this
        (
            f"UPDATE batch_traces SET groups = x'00', crc = {zlib.crc32(bytes(1))} "
            f"{_ONE_INDEX_ROW}",
            "row 1 of table batch_traces is malformed",
        ),
        (
            f"UPDATE batch_traces SET crc = 'none' {_ONE_INDEX_ROW}",
            "a row of table batch_traces is malformed (1)",
        ),
        (
            f"UPDATE releases SET trace_ids = substr(trace_ids, 2) {_ONE_RELEASE}",
            "a row of table releases is malformed (1)",
        ),
        (
            f"UPDATE releases SET crc = crc + 1 {_ONE_RELEASE}",
            "row 1 of table releases does not match its checksum",
        ),
    ],
)
def test_a_damaged_index_row_is_refused_before_serving(
    healthy: Path, tmp_path: Path, update: str, problem: str
) -> None:
    # damage inside a row that leaves SQLite's structure intact (quick_check passes)
    store = tmp_path / "spans.db"
    shutil.copy(healthy, store)
    with sqlite3.connect(store) as db:
        db.execute(update)
    before = store.read_bytes()
    # serve checks the index rows on its writer thread, before it stores anything
    server = ProcessorServer(ServerConfig(store=store, grpc_port=0, http_port=0)).start()
    try:
        with pytest.raises(
            DamagedStore, match=re.escape(f"{store}: is a damaged span store ({problem}")
        ):
            server.wait_started()
    finally:
        server.stop()
    assert store.read_bytes() == before


def test_the_store_checksum_is_zlibs_crc32() -> None:
    """Stores written with either implementation read with the other (isal is optional)."""
    from spanguard_processor.store.schema import crc

    rng = random.Random(3)
    for size in (0, 1, 7, 8, 15, 16, 63, 64, 1000, 65_537, 300_001):
        data = rng.randbytes(size)
        assert crc(data) == zlib.crc32(data)
