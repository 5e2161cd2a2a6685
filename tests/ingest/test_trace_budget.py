"""The per-trace span budget (issue 37, "Memory returns"): its counts live in tables allocated
at start, so a burst of new traces leaves nothing on the Python heap to give back, and it keeps
at least ``trace_memory`` recent traces — a client that pauses gets no fresh budget for a trace
it already filled, even after the idle writer gave its memory back."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTracePartialSuccess

from spanguard_processor.collector import ingestor as ingestor_module
from spanguard_processor.collector.limits import Limits
from spanguard_processor.ingest.shaping import Shape, TraceBudget
from spanguard_processor.store.span_store import SpanStore

from ..reliability.servers import PROTO, request_bytes, running, spans_of_one_trace


def _trace(number: int) -> str:
    return f"{number:032x}"


@pytest.mark.slow
def test_a_burst_of_new_traces_leaves_nothing_on_the_heap() -> None:
    budget = TraceBudget(max_spans_per_trace=10, trace_memory=100_000)
    requests = [[(_trace(n * 2 + k), 5) for k in range(2)] for n in range(100_000)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for counts in requests:
            budget.admit(counts, Shape())
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # the old OrderedDict kept every trace id and count: ~15 MB for these 100,000 traces
    assert kept < 100_000, kept


def test_the_budget_remembers_at_least_trace_memory_recent_traces() -> None:
    budget = TraceBudget(max_spans_per_trace=3, trace_memory=1_000)
    for number in range(5_500):
        assert budget.admit([(_trace(number), 3)], Shape()) == {}
    for number in range(5_499, 4_499, -1):  # the 1,000 seen last: each one full already
        shape = Shape()
        assert budget.admit([(_trace(number), 1)], shape) == {_trace(number): 0}, number
        assert shape.rejected == 1 and "more than 3 spans" in (shape.error or "")
    assert budget.admit([(_trace(0), 3)], Shape()) == {}  # long forgotten: counted afresh


def test_counts_add_up_across_requests_and_cut_at_the_limit() -> None:
    budget = TraceBudget(max_spans_per_trace=5, trace_memory=10)
    shape = Shape()
    assert budget.admit([(_trace(1), 2), (_trace(2), 5)], shape) == {}
    assert budget.admit([(_trace(1), 4), (_trace(2), 1)], shape) == {_trace(1): 3, _trace(2): 0}
    assert shape.rejected == 2


@pytest.mark.integration
def test_a_client_that_pauses_gets_no_fresh_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ingestor_module, "_REST_AFTER", 0.3)
    spans = spans_of_one_trace(8)
    url = "/v1/traces"
    with running(tmp_path / "s.db", grpc_port=None, limits=Limits(max_spans_per_trace=5)) as server:
        base = f"http://127.0.0.1:{server.http_port}"
        first = httpx.post(base + url, content=request_bytes(spans[:5]), headers=PROTO)
        assert first.status_code == 200
        deadline = time.monotonic() + 5
        while server.ingestor.rests == 0 and time.monotonic() < deadline:
            time.sleep(0.05)  # the writer rested: gave back what it could
        assert server.ingestor.rests > 0
        later = httpx.post(base + url, content=request_bytes(spans[5:]), headers=PROTO)
        partial = ExportTracePartialSuccess.FromString(later.content)
        assert later.status_code == 400, later.content  # every span of it rejected
        assert partial.rejected_spans == 3 and "more than 5 spans" in partial.error_message
    with SpanStore(tmp_path / "s.db", readonly=True) as store:
        assert store.span_count() == 5
