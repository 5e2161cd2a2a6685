"""Issue 39, acceptance 1 and 2 against a real ``spanguard serve``: the EVENT_ONLY genai-openai app
(tests/adapters/event_only_app.py) exports its spans and its log records by OTLP, once over HTTP
and once over gRPC; verdicts sent back with ``--emit-otlp`` (directly, and through the real rotel
collector) are stored with the traces they judge and leave with ``traces export``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from spanguard_processor.cli import cli
from spanguard_processor.inputs.readers import read_agent_traces_any
from tests.emit.test_emit_cases import _ROOT, _TRACE, QUESTION, _cases, _span_file
from tests.sdk.rotel_helper import RotelCollector
from tests.serve_process import ServeProcess

from .openai_stub import openai_stub
from .test_log_events import ANSWER, APP, REFUSAL, SEEDS, _responder, _suite

pytestmark = pytest.mark.integration
_FAST = ["--bootstrap", "300", "--permutations", "199", "--format", "json"]


def _serve(tmp_path: Path, name: str) -> tuple[ServeProcess, Path]:
    store = tmp_path / f"{name}.db"
    return ServeProcess(store, "--wait-duration", "0.3"), store


def _run_app(server: ServeProcess, variants: Path, transport: str, *, biased: bool) -> None:
    endpoint = server.url if transport == "http" else f"http://127.0.0.1:{server.grpc_port}"
    env = {
        **os.environ,
        "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "EVENT_ONLY",
    }
    with openai_stub(_responder(biased)) as stub:
        run = subprocess.run(
            [sys.executable, str(APP), endpoint, f"otlp-{transport}", stub.base_url, str(variants)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert run.returncode == 0, run.stderr
    assert "Failed to export" not in run.stderr and "rror" not in run.stderr, run.stderr


def _exported(store: Path, tmp_path: Path) -> dict[str, dict[str, Any]]:
    out = tmp_path / f"{store.stem}.jsonl"
    result = CliRunner().invoke(cli, ["traces", "export", "--store", str(store), "-o", str(out)])
    assert result.exit_code == 0, result.output
    return {t["trace_id"]: t for t in map(json.loads, out.read_text().splitlines())}


def _wait_for_spans(server: ServeProcess, more_than: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if httpx.get(server.url + "/health").json()["spans_received"] > more_than:
            return
        time.sleep(0.1)
    raise AssertionError("the evaluation records did not reach serve")


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_the_event_only_app_into_serve_every_request_carries_its_answer_and_the_gate_fails(
    tmp_path: Path, transport: str
) -> None:
    suite, variants = _suite(tmp_path)
    server, store = _serve(tmp_path, "biased")
    try:
        _run_app(server, variants, transport, biased=True)
        health = server.wait_idle(2 * SEEDS * 3)  # a request span, a chat span, a log record
        assert health["spans_received"] == 2 * SEEDS * 3
        failed = CliRunner().invoke(cli, ["fairness", str(suite), str(store), *_FAST])
        assert failed.exit_code == 1, failed.output
        [metric] = json.loads(failed.stdout)["metric_results"]
        assert metric["verdict"] == "fail" and metric["score"] == pytest.approx(1.0)
        sent = CliRunner().invoke(
            cli,
            [
                "fairness",
                str(suite),
                str(store),
                *_FAST,
                "--emit-otlp",
                server.url if transport == "http" else f"grpc://127.0.0.1:{server.grpc_port}",
            ],
        )
        assert sent.exit_code == 1 and "not sent" not in sent.stderr, sent.stderr
        assert "gen_ai.evaluation.result record(s)" in sent.stderr, sent.stderr
        _wait_for_spans(server, 2 * SEEDS * 3)
    finally:
        server.terminate()
    traces = list(read_agent_traces_any([store]))
    assert len(traces) == 2 * SEEDS
    for trace in traces:
        renter = trace.assignments["tenure"] == "renter"
        assert trace.output == (REFUSAL if renter else ANSWER), trace.variant_id
        assert trace.input and trace.input.startswith("Question ")
    exported = _exported(store, tmp_path)
    # the metric's verdict is stored with every evaluated trace (issue 48), the pair records
    # with the traces of the evidence's pairs
    assert exported and all(t.get("evaluations") for t in exported.values())
    for trace in exported.values():
        for result in trace["evaluations"]:
            assert (result["name"], result["label"]) == ("refusal_gap", "fail")
            assert result["attributes"]["spanguard.variant_id"] == trace["variant_id"]
        verdicts = [
            r
            for r in trace["evaluations"]
            if "spanguard.evaluation.pair_side" not in r["attributes"]
        ]
        assert len(verdicts) == 1


@pytest.mark.slow
def test_the_fair_app_into_serve_passes_on_answers_read(tmp_path: Path) -> None:
    suite, variants = _suite(tmp_path)
    server, store = _serve(tmp_path, "fair")
    try:
        _run_app(server, variants, "grpc", biased=False)
        server.wait_idle(2 * SEEDS * 3)
    finally:
        server.terminate()
    passed = CliRunner().invoke(cli, ["fairness", str(suite), str(store), *_FAST])
    assert passed.exit_code == 0, passed.output
    assert [t.output for t in read_agent_traces_any([store])] == [ANSWER] * (2 * SEEDS)


@pytest.mark.parametrize("route", ["direct", "rotel"])
def test_cases_run_verdicts_sent_to_serve_ride_on_the_judged_trace(
    tmp_path: Path, route: str
) -> None:
    cases, built = _cases(tmp_path)
    spans = _span_file(tmp_path, ("lookup_order", "refund_policy"))
    server, store = _serve(tmp_path, "cases")
    try:
        reply = httpx.post(
            server.url + "/v1/traces",
            content=spans.read_bytes(),
            headers={"content-type": "application/json"},
        )
        assert reply.status_code == 200, reply.text
        before = server.wait_idle(4)["spans_received"]
        if route == "rotel":
            with RotelCollector(export_to=f"http://127.0.0.1:{server.grpc_port}") as rotel:
                result = CliRunner().invoke(
                    cli,
                    [
                        "cases",
                        "run",
                        "--cases",
                        cases,
                        "--traces",
                        str(spans),
                        "--emit-otlp",
                        rotel.http_endpoint,
                    ],
                )
                _wait_for_spans(server, before)
        else:
            result = CliRunner().invoke(
                cli,
                [
                    "cases",
                    "run",
                    "--cases",
                    cases,
                    "--traces",
                    str(spans),
                    "--emit-otlp",
                    server.url,
                ],
            )
        assert result.exit_code == 0, result.output
        assert "warning" not in result.stderr, result.stderr
        _wait_for_spans(server, before)
    finally:
        server.terminate()
    # one verdict per case the trace answers (its question has a case per process path), each
    # on the judged trace's root span; the case for the path it took passes
    evaluations = _exported(store, tmp_path)[_TRACE]["evaluations"]
    asked = sorted(c["id"] for c in built if c["input"] == QUESTION)
    assert sorted(e["attributes"]["spanguard.case.id"] for e in evaluations) == asked
    for result in evaluations:
        assert result["name"] == "spanguard.case"
        assert result["span_id"] == _ROOT
        assert result["response_id"] == "chatcmpl-42"
    assert any((e["label"], e["score"]) == ("pass", 1.0) for e in evaluations)


@pytest.mark.slow
def test_fairness_verdicts_through_rotel_into_serve(tmp_path: Path) -> None:
    suite, variants = _suite(tmp_path)
    server, store = _serve(tmp_path, "rotel")
    try:
        _run_app(server, variants, "http", biased=True)
        received = server.wait_idle(2 * SEEDS * 3)["spans_received"]
        with RotelCollector(export_to=f"http://127.0.0.1:{server.grpc_port}") as rotel:
            sent = CliRunner().invoke(
                cli,
                ["fairness", str(suite), str(store), *_FAST, "--emit-otlp", rotel.http_endpoint],
            )
            assert sent.exit_code == 1, sent.output
            _wait_for_spans(server, received)
    finally:
        server.terminate()
    judged = [t for t in _exported(store, tmp_path).values() if t.get("evaluations")]
    assert judged
    assert {e["name"] for t in judged for e in t["evaluations"]} == {"refusal_gap"}
