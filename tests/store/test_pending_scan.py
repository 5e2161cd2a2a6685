"""Writer-ready time on a big store (issue 37, "Fast start on a big store"): a writer finds the
traces a previous run left pending from the index and release rows alone, without building the
per-trace view a reader builds (on a 1 GB store that view took 8-10 s, while requests waited),
and finds exactly what the view would give: each span once, late spans of a released trace
left released, a store's damaged row named."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from spanguard_processor.ingest.spans import TraceGroup
from spanguard_processor.store.span_store import DamagedStore, SpanStore

from .test_store import encoded, only


def _temp_tables(store: SpanStore) -> list[str]:
    return [name for (name,) in store.db.execute("SELECT name FROM temp.sqlite_master")]


def _pending_by_the_view(path: Path) -> list[TraceGroup]:
    """What a reader's per-trace view says is pending (the oracle)."""
    with SpanStore(path, readonly=True) as reader:
        reader.refresh()
        rows = reader.db.execute(
            "SELECT b.trace_id, b.span_ids, b.root FROM trace_batches b"
            " JOIN traces t ON t.trace_id = b.trace_id"
            " WHERE t.released = 0 ORDER BY b.trace_id, b.batch_id"
        ).fetchall()
    return [TraceGroup(trace_id, ids, 0, bool(root), 0) for trace_id, ids, root in rows]


def _a_store_with_every_case(path: Path) -> None:
    first, second, third = encoded(2), encoded(3), encoded(2)
    traces = sorted({span.trace_id for span in first.spans})
    with SpanStore(path) as store:
        store.put_batches([first])
        store.mark_released([traces[0]])  # released; the other stays pending
        children = [span for span in second.spans if not span.is_root]
        store.put_batches([only(second, children)])  # pending, root not yet seen
        store.put_batches([third], release=sorted({span.trace_id for span in third.spans}))
    with SpanStore(path) as store:  # a new writer remembers no span id: re-sent ones are kept
        store.put_batches([first])  # a retry of both traces of the first batch
        late = [span for span in third.spans if span.is_root]
        store.put_batches([only(third, late)])  # late spans of released traces stay released
        store.put_batches([only(second, [s for s in second.spans if s.is_root])])


def test_pending_traces_come_from_the_rows_without_building_the_view(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _a_store_with_every_case(path)
    expected = _pending_by_the_view(path)
    assert len({group.trace_id for group in expected}) == 4  # 1 of the first batch, 3 of the second
    with SpanStore(path) as store:
        pending = list(store.pending_groups())
        assert _temp_tables(store) == []  # no per-trace view was built
    assert pending == expected


def test_a_damaged_release_row_is_named_by_the_pending_scan(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _a_store_with_every_case(path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE releases SET crc = crc + 1 WHERE id = 1")
    with SpanStore(path, verify_batches=False) as store, pytest.raises(DamagedStore) as error:
        list(store.pending_groups())
    assert "row 1 of table releases does not match its checksum" in str(error.value)
    assert str(path) in str(error.value)
