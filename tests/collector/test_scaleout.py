"""Scale-out: N ``spanguard serve`` replicas behind trace-id routing equal one processor.

The fixture does what the Collector's ``load_balancing`` exporter does with
``routing_key: traceID``: every span of a trace goes to the same replica, chosen by a hash of the
trace id. Annotation spans (``spanguard.feedback``) are traces of their own, so some land on
another replica than the request they annotate. Read together, the replica stores must give
exactly the agent traces, fairness report and regression cases of a single processor.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import grpc
import pytest
from click.testing import CliRunner
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.sdk.trace import ReadableSpan

import spanguard
from spanguard import semconv
from spanguard.testing import capture_spans
from spanguard_processor.cli import cli
from spanguard_processor.collector.server import ProcessorServer, ServerConfig
from spanguard_processor.inputs.readers import read_agent_traces_any

pytestmark = pytest.mark.integration

GROUPS = ("woman", "man", "nonbinary")
SEEDS = 12
REPLICAS = 3


@spanguard.tool
def kb_search(query: str) -> list[str]:
    return [query[:10]]


def _variants() -> list[dict[str, object]]:
    return [
        {
            "id": f"s{seed}::{group}",
            "seed_id": f"s{seed}",
            "assignments": {"gender": group},
            "prompt": f"Question {seed} from a {group} customer: can I get a refund?",
        }
        for seed in range(SEEDS)
        for group in GROUPS
    ]


def _workload() -> tuple[ReadableSpan, ...]:
    """Suite traffic through the SDK: escalations for some variants, feedback on others."""
    with capture_spans(capture_content=True) as capture:
        for number, variant in enumerate(_variants()):
            with spanguard.request(
                "support",
                seed_id=str(variant["seed_id"]),
                variant_id=str(variant["id"]),
                assignments=variant["assignments"],  # type: ignore[arg-type]
                input=variant["prompt"],
            ) as req:
                if number % 4 == 0:
                    spanguard.escalate(reason="manual review")
                else:
                    kb_search(str(variant["prompt"]))
                spanguard.plan_step("lookup")
                req.set_output(f"Answer {number}: refunds take five days.")
            if number % 3 == 0:
                spanguard.feedback(req.request_id, "negative")
                spanguard.mark_retried(req.request_id)
        return capture.readable_spans()


def _replica_of(span: ReadableSpan) -> int:
    trace_id = span.context.trace_id.to_bytes(16, "big")  # type: ignore[union-attr]
    return int.from_bytes(hashlib.sha256(trace_id).digest()[:4], "big") % REPLICAS


def _serve(store: Path, spans: Sequence[ReadableSpan]) -> None:
    """One replica: a real processor on 127.0.0.1, fed over OTLP/gRPC in small requests."""
    server = ProcessorServer(
        ServerConfig(store=store, grpc_port=0, http_port=None, wait_duration=0.2)
    ).start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
            stub = trace_service_pb2_grpc.TraceServiceStub(channel)
            for start in range(0, len(spans), 7):  # traces split across requests
                stub.Export(encode_spans(spans[start : start + 7]), timeout=30)
    finally:
        server.stop()


def _run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code in (0, 1), result.output
    return result.output


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    tmp = tmp_path_factory.mktemp("scaleout")
    spans = _workload()
    single = tmp / "single.db"
    _serve(single, spans)
    parts = [tmp / f"replica-{i}.db" for i in range(REPLICAS)]
    for index, path in enumerate(parts):
        _serve(path, [s for s in spans if _replica_of(s) == index])
    return {"single": [single], "replicas": parts}


def test_every_replica_holds_part_and_annotations_cross_replicas() -> None:
    spans = _workload()
    by_request: dict[str, set[int]] = {}
    for span in spans:
        request_id = (span.attributes or {}).get(semconv.REQUEST_ID)
        if isinstance(request_id, str):
            by_request.setdefault(request_id, set()).add(_replica_of(span))
    assert {_replica_of(s) for s in spans} == set(range(REPLICAS))
    assert any(len(replicas) > 1 for replicas in by_request.values())


def test_replicas_read_together_give_the_single_processors_traces(
    stores: dict[str, list[Path]],
) -> None:
    single = sorted(
        (t.to_dict() for t in read_agent_traces_any(stores["single"])),
        key=lambda t: str(t["trace_id"]),
    )
    merged = sorted(
        (t.to_dict() for t in read_agent_traces_any(stores["replicas"])),
        key=lambda t: str(t["trace_id"]),
    )
    assert len(single) == SEEDS * len(GROUPS)
    assert merged == single
    assert sum(1 for t in single if t["feedback"] is not None) == SEEDS  # annotations merged


def test_replicas_give_the_same_fairness_and_regression_results(
    stores: dict[str, list[Path]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")  # the reports' timestamp
    suite = tmp_path / "suite.json"
    suite.write_text(
        json.dumps(
            {
                "dataset": {"variants": _variants()},
                "metrics": [{"type": "escalation_parity"}, {"type": "tool_use_parity"}],
            }
        )
    )
    outputs: dict[str, dict[str, bytes]] = {}
    for name, paths in stores.items():
        out = tmp_path / name
        _run(
            "fairness",
            str(suite),
            *map(str, paths),
            "-o",
            str(out / "fairness"),
            "--bootstrap",
            "200",
            "--permutations",
            "199",
        )
        traces = out / "traces.jsonl"
        _run(
            "traces", "export", *[a for p in paths for a in ("--store", str(p))], "-o", str(traces)
        )
        _run("cases", "build", str(traces), "-o", str(out / "evalset"))
        _run(
            "cases",
            "run",
            "--cases",
            str(out / "evalset" / "cases.jsonl"),
            "--traces",
            str(traces),
            "-o",
            str(out / "run.json"),
        )
        outputs[name] = {
            "report": (out / "fairness" / "report.json").read_bytes(),
            "cases": (out / "evalset" / "cases.jsonl").read_bytes(),
            "run": (out / "run.json").read_bytes(),
        }
    for key in ("report", "cases", "run"):
        single = outputs["single"][key].decode().replace(str(tmp_path / "single"), "OUT")
        merged = outputs["replicas"][key].decode().replace(str(tmp_path / "replicas"), "OUT")
        assert merged == single, key
