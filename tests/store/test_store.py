"""The SQLite store: idempotent upserts, partial flags, late merges, annotations, resume."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import replace
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from spanguard.exceptions import TraceFormatError
from spanguard_processor.ingest.otlp_proto import decode_request
from spanguard_processor.ingest.spans import DecodedBatch, EncodedSpan
from spanguard_processor.inputs.stored_traces import stored_agent_traces
from spanguard_processor.store.span_store import SpanStore
from tests.agent_app import SPANS_PER_REQUEST, in_memory_spans


def encoded(count: int = 2) -> DecodedBatch:
    return decode_request(encode_spans(in_memory_spans(count).get_finished_spans()))


def only(batch: DecodedBatch, spans: list[EncodedSpan]) -> DecodedBatch:
    return replace(batch, spans=tuple(spans))


def test_upsert_stores_each_span_once_and_store_is_wal(tmp_path: Path) -> None:
    batch = encoded()
    with SpanStore(tmp_path / "s.db") as store:
        assert store.put_batches([batch]) == 2 * SPANS_PER_REQUEST
        assert store.put_batches([only(batch, list(batch.spans[:3]))]) == 0
        assert store.span_count() == 2 * SPANS_PER_REQUEST
        assert store._db.execute("SELECT count(*) FROM batches").fetchone()[0] == 1
    mode = sqlite3.connect(tmp_path / "s.db").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_released_traces_export_and_pending_ones_do_not(tmp_path: Path) -> None:
    batch = encoded()
    with SpanStore(tmp_path / "s.db") as store:
        store.put_batches([batch])
        first = batch.spans[0].trace_id
        store.mark_released([first])
        assert [t.trace_id for t in stored_agent_traces(store)] == [first]
        both = list(stored_agent_traces(store, include_pending=True))
        assert len(both) == 2 and [t.partial for t in both if t.trace_id != first] == [True]
        assert store.trace_counts() == (1, 1)


def test_trace_released_without_root_is_partial_until_the_late_root_merges(tmp_path: Path) -> None:
    batch = encoded(1)
    root = next(s for s in batch.spans if s.is_root)
    children = [s for s in batch.spans if not s.is_root]
    with SpanStore(tmp_path / "s.db") as store:
        store.put_batches([only(batch, children)])
        store.mark_released([root.trace_id])
        (trace,) = stored_agent_traces(store)
        assert trace.partial is True
        store.put_batches([only(batch, [root])])
        store.mark_released([root.trace_id])
        (trace,) = stored_agent_traces(store)
        assert trace.partial is False and trace.request_id == "req-0000"
        assert trace.trace.tool_calls and trace.trace.retrieved_documents


def test_pending_spans_survive_reopening(tmp_path: Path) -> None:
    batch = encoded(1)
    with SpanStore(tmp_path / "s.db") as store:
        store.put_batches([batch])
    with SpanStore(tmp_path / "s.db") as store:
        pending = list(store.pending_groups())
    assert sorted(
        group.span_ids[i : i + 8].hex()
        for group in pending
        for i in range(0, len(group.span_ids), 8)
    ) == sorted(s.span_id for s in batch.spans)
    assert [group.root for group in pending] == [True]


def test_a_file_that_is_not_a_store_is_an_input_error(tmp_path: Path) -> None:
    bad = tmp_path / "x.db"
    bad.write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(TraceFormatError, match=r"x\.db: is not a spanguard span store"):
        SpanStore(bad, readonly=True)


def test_a_failing_store_fails_requests_instead_of_hanging_them(tmp_path: Path) -> None:
    from spanguard_processor.collector.assembler import TraceAssembler
    from spanguard_processor.collector.ingestor import Ingestor

    store = SpanStore(tmp_path / "s.db")
    ingestor = Ingestor(store, TraceAssembler(wait_duration=0.0)).start()
    assert ingestor.submit(encoded(1)).result(timeout=10) is None
    store._db.execute("DROP TABLE batches")  # the disk "fails"
    with pytest.raises(sqlite3.OperationalError):
        ingestor.submit(encoded(1)).result(timeout=10)
    assert not ingestor.healthy
    with pytest.raises(RuntimeError, match="store failed"):
        ingestor.submit(encoded(1)).result(timeout=10)
    ingestor.close()
    store.close()


def test_a_store_failing_to_index_refuses_further_requests(tmp_path: Path) -> None:
    """The acknowledging commit stores bodies only; when the later index commit fails for
    good, the writer stops accepting (what it acknowledged is stored)."""
    from spanguard_processor.collector.assembler import TraceAssembler
    from spanguard_processor.collector.ingestor import Ingestor

    store = SpanStore(tmp_path / "s.db")
    ingestor = Ingestor(store, TraceAssembler(wait_duration=100.0)).start()
    store._db.execute("DROP TABLE batch_traces")  # the disk "fails"
    assert ingestor.submit(encoded(1)).result(timeout=10) is None  # its body is stored
    deadline = time.monotonic() + 10
    while ingestor.healthy and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not ingestor.healthy
    with pytest.raises(RuntimeError, match="store failed"):
        ingestor.submit(encoded(1)).result(timeout=10)
    assert store.db.execute("SELECT count(*) FROM batches").fetchone()[0] == 1
    ingestor.close()
    store.close()


def test_a_span_delivered_twice_is_stored_once_and_counted_as_duplicated(tmp_path: Path) -> None:
    from spanguard_processor.collector.assembler import TraceAssembler
    from spanguard_processor.collector.ingestor import Ingestor

    batch = encoded(2)
    with SpanStore(tmp_path / "s.db") as store:
        ingestor = Ingestor(store, TraceAssembler(wait_duration=100.0)).start()
        ingestor.submit(batch).result(timeout=10)
        ingestor.submit(only(batch, list(batch.spans[:3]))).result(timeout=10)  # a retry
        ingestor.close()  # indexes what is stored: duplicates are counted then
        stats = ingestor.stats()
        assert stats.spans_received == 2 * SPANS_PER_REQUEST + 3
        assert stats.spans_duplicated == 3
        assert store.span_count() == 2 * SPANS_PER_REQUEST


def test_batches_stored_but_never_indexed_are_indexed_when_the_store_is_opened(
    tmp_path: Path,
) -> None:
    """The acknowledging commit stores bodies only (append_batches), the index comes later:
    a writer stopped in between loses nothing. A reader sees those spans without writing to
    the file; the next writable open indexes them, and drops a batch with no new span."""
    spans = in_memory_spans(3).get_finished_spans()
    first = decode_request(encode_spans(spans[: 2 * SPANS_PER_REQUEST]))
    retry = decode_request(encode_spans(spans[:3]))  # an exporter retry: nothing new
    late = decode_request(encode_spans(spans[2 * SPANS_PER_REQUEST :]))
    path = tmp_path / "s.db"
    with SpanStore(path) as store:
        store.put_batches([first])
        stored = store.append_batches([retry, late])
        assert [batch_id for batch_id, _ in stored] == [2, 3]
        assert store.span_count() == 2 * SPANS_PER_REQUEST  # not indexed yet
    before = path.read_bytes()
    with SpanStore(path, readonly=True) as store:
        assert len(store.span_ids()) == 3 * SPANS_PER_REQUEST
        assert store.trace_counts() == (0, 3)
        assert store.db.execute("SELECT count(*) FROM batches").fetchone()[0] == 3
    assert path.read_bytes() == before
    with SpanStore(path) as store:
        assert store.span_count() == 3 * SPANS_PER_REQUEST
        assert [i for (i,) in store.db.execute("SELECT id FROM batches ORDER BY id")] == [1, 3]
        assert store.trace_counts() == (0, 3)
    with SpanStore(path) as store:  # nothing is left to index
        assert store._index_unindexed() == 0


def test_index_batches_counts_only_new_spans_and_removes_pure_redeliveries(tmp_path: Path) -> None:
    spans = in_memory_spans(2).get_finished_spans()
    whole = decode_request(encode_spans(spans))
    retry = decode_request(encode_spans(spans[:3]))
    with SpanStore(tmp_path / "s.db") as store:
        stored = store.append_batches([whole, retry, whole])
        assert store.index_batches(stored, release=[whole.traces[0].trace_id]) == len(spans)
        assert store.span_count() == len(spans)
        assert store.db.execute("SELECT count(*) FROM batches").fetchone()[0] == 1
        assert store.trace_counts() == (1, 1)


def test_an_index_commit_that_fails_finds_the_same_spans_new_when_tried_again(
    tmp_path: Path,
) -> None:
    """The writer remembers what it stored only once the commit holds: a refused index
    commit (a full disk) is retried by the ingestor, and must not find its own spans
    "already stored" and drop acknowledged batches."""
    batch = encoded(3)
    with SpanStore(tmp_path / "s.db") as store:
        stored = store.append_batches([batch])

        def refuse(action: int, table: str | None, *_: object) -> int:
            return (
                sqlite3.SQLITE_DENY
                if (action, table) == (sqlite3.SQLITE_INSERT, "batch_traces")
                else sqlite3.SQLITE_OK
            )

        store.db.set_authorizer(refuse)
        with pytest.raises(sqlite3.DatabaseError):
            store.index_batches(stored, release=[batch.traces[0].trace_id])
        store.db.set_authorizer(None)
        assert store.index_batches(stored, release=[batch.traces[0].trace_id]) == (
            3 * SPANS_PER_REQUEST
        )
        assert store.span_count() == 3 * SPANS_PER_REQUEST
        assert store.trace_counts() == (1, 2)


def test_spans_stored_again_after_the_writer_forgot_them_are_read_once(tmp_path: Path) -> None:
    """Beyond the writer's memory of recent traces a re-delivered span is stored again;
    reading deduplicates it exactly (span ids, counts, the trace itself)."""
    from spanguard_processor.store.view import RecentSpans

    first = encoded(1)
    others = [encoded(1) for _ in range(4)]
    with SpanStore(tmp_path / "s.db") as store:
        store._recent = RecentSpans(capacity=2)
        store.put_batches([first])
        (before,) = [
            replace(trace, partial=False)
            for trace in stored_agent_traces(store, include_pending=True)
        ]
        for batch in others:
            store.put_batches([batch])
        assert store.put_batches([first]) == SPANS_PER_REQUEST  # forgotten: stored again
        assert store.db.execute("SELECT count(*) FROM batches").fetchone()[0] == 6
        assert store.span_count() == 5 * SPANS_PER_REQUEST
        assert len(set(store.span_ids())) == len(store.span_ids()) == 5 * SPANS_PER_REQUEST
        store.release_all()
        assert store.trace_counts() == (5, 0)
        traces = {trace.trace_id: trace for trace in stored_agent_traces(store)}
        assert traces[first.traces[0].trace_id] == before
    with SpanStore(tmp_path / "s.db", readonly=True) as store:  # and from a new reader
        assert len(store.span_ids()) == 5 * SPANS_PER_REQUEST
        assert store.check_index() == 5  # the batch stored again adds no row to the view
