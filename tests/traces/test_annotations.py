"""Late annotations (feedback, expectations, retry marks) merge the same way on every route:
in-process spans, a span file, one store, and store partitions read together."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan

import spanguard
from spanguard import semconv
from spanguard.testing import capture_spans
from spanguard_processor.ingest.otlp_proto import decode_request
from spanguard_processor.inputs.readers import read_agent_traces_any
from spanguard_processor.inputs.stored_traces import stored_agent_traces
from spanguard_processor.store.span_store import SpanStore
from spanguard_processor.traces.annotations import Annotations
from spanguard_processor.traces.convert import record_from_readable_span, traces_from_readable_spans


def _workload() -> tuple[list[ReadableSpan], list[ReadableSpan], list[str]]:
    """Three requests, then — after all of them ended — annotations aimed at two of them, a
    correction of one feedback, and one aimed at a request that was never recorded."""
    with capture_spans(capture_content=True, deterministic=True) as capture:
        ids = []
        for number in range(3):
            with spanguard.request(
                "support",
                seed_id=f"s{number}",
                variant_id=f"s{number}::a",
                input=f"Question {number}?",
            ) as req:
                spanguard.plan_step("lookup")
                if number == 2:
                    req.set_output("Answer 2.")
                    spanguard.feedback(req.request_id, "positive")  # inside the request
                else:
                    req.set_output(f"Answer {number}.")
            ids.append(req.request_id)
        requests = list(capture.readable_spans())
        spanguard.feedback(ids[0], "negative")
        spanguard.expect(ids[0], contains="refund", max_chars=200)
        spanguard.mark_retried(ids[1])
        spanguard.feedback(ids[1], 2)
        spanguard.feedback(ids[1], 5)  # a later correction wins
        spanguard.feedback("never-recorded", "negative")
        annotations = list(capture.readable_spans())[len(requests) :]
    return requests, annotations, ids


def _span_file(path: Path, spans: Sequence[ReadableSpan]) -> Path:
    with path.open("wb") as out:
        for start in range(0, len(spans), 3):
            body = encode_spans(spans[start : start + 3]).SerializeToString()
            out.write(struct.pack(">I", len(body)) + body)
    return path


def _store(path: Path, *batches: Sequence[ReadableSpan]) -> Path:
    with SpanStore(path) as store:
        store.put_batches([decode_request(encode_spans(spans)) for spans in batches if spans])
        store.release_all()
    return path


def test_late_annotations_merge_identically_on_every_route(tmp_path: Path) -> None:
    requests, annotations, ids = _workload()
    assert len(annotations) == 6 and all(s.name == semconv.SPAN_ANNOTATION for s in annotations)
    in_process = [t.to_dict() for t in traces_from_readable_spans([*requests, *annotations])]

    first, second, third = (in_process[i] for i in range(3))
    assert [t["request_id"] for t in in_process] == ids
    assert (first["feedback"], first["expect"], first["retried"]) == (
        "negative",
        {"contains": ["refund"], "max_chars": 200},
        False,
    )
    assert (second["feedback"], second["retried"]) == (5, True)
    assert third["feedback"] == "positive"

    span_file = _span_file(tmp_path / "spans.binpb", [*requests, *annotations])
    one_store = _store(tmp_path / "one.db", requests, annotations)
    # Partitions as replicas hold them: the annotations in another store than their requests,
    # one of them delivered to both.
    part_a = _store(tmp_path / "a.db", requests, annotations[:1])
    part_b = _store(tmp_path / "b.db", annotations)
    routes = {
        "span file": read_agent_traces_any([span_file]),
        "store": read_agent_traces_any([one_store]),
        "store, directly": stored_agent_traces(SpanStore(one_store, readonly=True)),
        "partitions": read_agent_traces_any([part_a, part_b]),
    }
    for name, traces in routes.items():
        assert [t.to_dict() for t in traces] == in_process, name


def test_an_annotation_delivered_twice_counts_once() -> None:
    requests, annotations, ids = _workload()
    records = [record_from_readable_span(s) for s in annotations]
    merged = Annotations(records)
    merged.update(Annotations(records[:2]))
    assert len(merged) == len(records)  # each once; the one aimed at no request is kept too
    assert len(merged.for_request(ids[0])) == 2 and merged.for_request(None) == []
    twice = traces_from_readable_spans([*requests, *annotations, *annotations])
    assert [t.to_dict() for t in twice] == [
        t.to_dict() for t in traces_from_readable_spans([*requests, *annotations])
    ]


def test_the_evaluators_merge_annotations_across_store_partitions(tmp_path: Path) -> None:
    """``cases build a.db b.db`` reads each store on its own, but an annotation written to
    another replica's store than its request still reaches the request's row."""
    from spanguard_processor.regression.mine.loader import load_logs

    requests, annotations, ids = _workload()
    one_store = _store(tmp_path / "one.db", requests, annotations)
    parts = [_store(tmp_path / "a.db", requests), _store(tmp_path / "b.db", annotations)]

    def rows(paths: list[Path]) -> list[tuple[object, ...]]:
        return [(row.id, row.feedback, row.retried, row.expect) for row in load_logs(paths).rows]

    assert rows(parts) == rows([one_store])
    assert rows(parts)[0] == (ids[0], "negative", False, {"contains": ["refund"], "max_chars": 200})
