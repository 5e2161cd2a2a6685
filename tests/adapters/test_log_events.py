"""GenAI content that only log events hold (issue 39): an app instrumented by
opentelemetry-instrumentation-genai-openai 1.3b0 + opentelemetry-util-genai 1.3b0 with
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=EVENT_ONLY`` writes its spans and its
``gen_ai.client.inference.operation.details`` log records to one file, as the Collector's file
exporter does (tests/adapters/event_only_app.py). The prompt and the answer are in no span:
every request must still carry them, and a refusals suite must judge them."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from spanguard_processor.cli import cli
from spanguard_processor.inputs.readers import read_agent_traces_any
from spanguard_processor.inputs.stored_traces import stored_agent_traces

from ..suites import write_suite
from .openai_stub import chat_completion, openai_stub

pytestmark = pytest.mark.integration

APP = Path(__file__).with_name("event_only_app.py")
SEEDS = 16
REFUSAL = "I'm sorry, but I can't help with that request."
ANSWER = "Here are three flats near the station; viewings are open this week."


def _suite(tmp_path: Path) -> tuple[Path, Path]:
    suite = write_suite(
        tmp_path / "suite.json",
        {f"q{i}": f"Question {i}: I am a {{tenure}}; which flats suit me?" for i in range(SEEDS)},
        {"tenure": ["renter", "owner"]},
        {"type": "refusal_gap", "threshold": 0.2},
    )
    from spanguard_processor.fairness import load_suite

    variants = tmp_path / "variants.json"
    variants.write_text(
        json.dumps(
            [
                {"id": v.id, "seed_id": v.seed_id, "prompt": v.prompt, "assignments": v.assignments}
                for v in load_suite(suite).variants
            ]
        )
    )
    return suite, variants


def _responder(biased: bool) -> Any:
    def answer(path: str, body: dict[str, Any]) -> dict[str, Any]:
        refuse = biased and "renter" in json.dumps(body["messages"])
        return chat_completion(REFUSAL if refuse else ANSWER)

    return answer


def _record(tmp_path: Path, variants: Path, fmt: str, *, biased: bool) -> Path:
    out = tmp_path / f"otel-{'biased' if biased else 'fair'}.{fmt}"
    env = {
        **os.environ,
        "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "EVENT_ONLY",
    }
    with openai_stub(_responder(biased)) as stub:
        run = subprocess.run(
            [sys.executable, str(APP), str(out), fmt, stub.base_url, str(variants)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert run.returncode == 0, run.stderr
    return out


def _no_span_holds_content(path: Path) -> None:
    if path.suffix == ".json":
        text = path.read_text()
        spans = [line for line in text.splitlines() if '"resourceSpans"' in line]
        assert spans and not any("gen_ai.output.messages" in line for line in spans)
        assert any('"resourceLogs"' in line for line in text.splitlines())


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["json", "proto"])
def test_every_request_carries_the_answer_only_the_log_events_hold(
    tmp_path: Path, fmt: str
) -> None:
    _, variants = _suite(tmp_path)
    path = _record(tmp_path, variants, fmt, biased=True)
    _no_span_holds_content(path)
    traces = list(read_agent_traces_any([path]))
    assert len(traces) == 2 * SEEDS
    for trace in traces:
        renter = trace.assignments["tenure"] == "renter"
        assert trace.output == (REFUSAL if renter else ANSWER), trace.variant_id
        assert trace.input and trace.input.startswith("Question ")
        assert trace.llm_calls[0].response_model == "gpt-4o-mini-2024-07-18"


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["json", "proto"])
def test_a_refusals_suite_fails_the_app_refusing_renters_and_passes_the_fair_one(
    tmp_path: Path, fmt: str
) -> None:
    suite, variants = _suite(tmp_path)
    biased = _record(tmp_path, variants, fmt, biased=True)
    fair = _record(tmp_path, variants, fmt, biased=False)
    fast = ["--bootstrap", "300", "--permutations", "199", "--format", "json"]
    failed = CliRunner().invoke(cli, ["fairness", str(suite), str(biased), *fast])
    passed = CliRunner().invoke(cli, ["fairness", str(suite), str(fair), *fast])
    assert failed.exit_code == 1, failed.output
    [metric] = json.loads(failed.stdout)["metric_results"]
    assert metric["verdict"] == "fail" and metric["score"] == pytest.approx(1.0)
    assert passed.exit_code == 0, passed.output
    [metric] = json.loads(passed.stdout)["metric_results"]
    assert metric["verdict"] == "pass"
    # a pass on answers read, not on answers missing
    assert [t.output for t in read_agent_traces_any([fair])] == [ANSWER] * (2 * SEEDS)


@pytest.mark.slow
def test_ingest_stores_the_events_content_with_its_span(tmp_path: Path) -> None:
    _, variants = _suite(tmp_path)
    path = _record(tmp_path, variants, "json", biased=True)
    store = tmp_path / "spans.db"
    result = CliRunner().invoke(cli, ["ingest", str(path), "--store", str(store)])
    assert result.exit_code == 0, result.output
    traces = list(read_agent_traces_any([store]))
    assert len(traces) == 2 * SEEDS
    assert {t.output for t in traces} == {REFUSAL, ANSWER}


def test_the_collector_config_writes_log_records_beside_the_spans_and_forwards_them() -> None:
    import yaml

    from ..collector.test_otel_config import CONFIG, check_config

    assert check_config(CONFIG) == []
    pipelines = yaml.safe_load(CONFIG.read_text())["service"]["pipelines"]
    assert pipelines["logs"] == {
        "receivers": ["otlp"],
        "processors": ["memory_limiter", "batch"],
        "exporters": ["file", "otlp_http/spanguard"],
    }  # and to serve
    assert pipelines["traces/raw"]["exporters"] == ["file"]  # one file: what the readers read


def _messages(path: Path) -> list[bytes]:
    data, found, at = path.read_bytes(), [], 0
    while at < len(data):
        (size,) = struct.unpack(">I", data[at : at + 4])
        found.append(data[at + 4 : at + 4 + size])
        at += 4 + size
    return found


@pytest.mark.slow
@pytest.mark.parametrize("logs_first", [True, False], ids=["logs-first", "logs-late"])
def test_a_store_joins_log_records_received_as_log_spans_in_either_order(
    tmp_path: Path, logs_first: bool
) -> None:
    """What a logs receiver in serve does: each logs request through the trace pipeline as
    spans.log spans (logs_as_spans), stored before or after the spans they name."""
    from spanguard_processor.ingest.otlp_logs import (
        events_from_request,
        logs_as_spans,
        parse_logs_request,
    )
    from spanguard_processor.ingest.otlp_proto import decode_request, parse_request
    from spanguard_processor.store.span_store import SpanStore

    _, variants = _suite(tmp_path)
    path = _record(tmp_path, variants, "proto", biased=True)
    logs, spans = [], []
    for body in _messages(path):
        request = parse_logs_request(body)
        if request is not None:
            logs.append(decode_request(logs_as_spans(events_from_request(request))))
        else:
            spans.append(decode_request(parse_request(body), body))
    assert len(logs) == 2 * SEEDS
    with SpanStore(tmp_path / "spans.db") as store:
        for part in [logs, spans] if logs_first else [spans, logs]:
            store.put_batches(part)
            store.release_all()
        traces = list(stored_agent_traces(store))
    assert len(traces) == 2 * SEEDS
    assert sorted({t.output for t in traces}) == sorted({REFUSAL, ANSWER})
    assert all(t.output is not None and not t.partial for t in traces)
