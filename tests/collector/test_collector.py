"""End to end: real OTel SDK app → the rotel collector binary → ``spanguard serve`` → store."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import rotel
from click.testing import CliRunner
from fairtrace.traces import TraceValidator
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from trace2eval.schema import load_traces

from spanguard_processor.cli import cli
from spanguard_processor.inputs.stored_traces import stored_agent_traces
from spanguard_processor.store.span_store import SpanStore
from tests.agent_app import SPANS_PER_REQUEST, annotate, run_request
from tests.serve_process import ServeProcess, free_port

pytestmark = [pytest.mark.integration, pytest.mark.slow]
REQUESTS = 40


def rotel_binary() -> Path:
    binary = Path(rotel.__file__).parent / "rotel-agent"
    assert binary.is_file() and os.access(binary, os.X_OK), f"no rotel binary at {binary}"
    return binary


@contextmanager
def rotel_collector(tmp_path: Path, protocol: str, target: ServeProcess) -> Iterator[int]:
    grpc_in, http_in = free_port(), free_port()
    endpoint = (
        f"http://127.0.0.1:{target.grpc_port}"
        if protocol == "grpc"
        else f"http://127.0.0.1:{target.http_port}"
    )
    proc = subprocess.Popen(
        [
            str(rotel_binary()),
            "start",
            "--otlp-grpc-endpoint",
            f"127.0.0.1:{grpc_in}",
            "--otlp-http-endpoint",
            f"127.0.0.1:{http_in}",
            "--exporter",
            "otlp",
            "--otlp-exporter-endpoint",
            endpoint,
            "--otlp-exporter-protocol",
            protocol,
            "--pid-file",
            str(tmp_path / "rotel.pid"),
            "--log-file",
            str(tmp_path / "rotel.log"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        started = proc.stdout.readline()
        assert "Starting Rotel" in started, started
        yield grpc_in
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_sdk_app_through_rotel_to_the_processor(tmp_path: Path, protocol: str) -> None:
    store = tmp_path / "spans.db"
    server = ServeProcess(store, "--wait-duration", "0.3")
    try:
        with rotel_collector(tmp_path, protocol, server) as collector_port:
            provider = TracerProvider()
            provider.add_span_processor(
                BatchSpanProcessor(
                    OTLPSpanExporter(endpoint=f"127.0.0.1:{collector_port}", insecure=True)
                )
            )
            tracer = provider.get_tracer("rotel-test")
            ids = [run_request(tracer, i) for i in range(REQUESTS)]
            annotate(tracer, ids[3], **{"spanguard.feedback": "thumbs_down"})
            provider.shutdown()
            server.wait_idle(REQUESTS * SPANS_PER_REQUEST + 1)
    finally:
        summary = server.terminate()
    assert "stopped:" in summary
    with SpanStore(store, readonly=True) as db:
        assert db.span_count() == REQUESTS * SPANS_PER_REQUEST + 1
        traces = list(stored_agent_traces(db))
    assert sorted(t.request_id or "" for t in traces) == sorted(ids)
    assert all(not t.partial for t in traces)
    assert next(t for t in traces if t.request_id == ids[3]).feedback == "thumbs_down"

    runner = CliRunner()
    for fmt in ("agent", "fairtrace", "trace2eval"):
        out = tmp_path / f"{fmt}.jsonl"
        result = runner.invoke(
            cli, ["traces", "export", "--store", str(store), "-f", fmt, "-o", str(out)]
        )
        assert result.exit_code == 0, result.output
        assert f"wrote {REQUESTS} {fmt} record(s)" in result.output
    records = [json.loads(line) for line in (tmp_path / "fairtrace.jsonl").read_text().splitlines()]
    for record in records:
        TraceValidator().validate(record["response_metadata"])
    loaded = load_traces(tmp_path / "trace2eval.jsonl")
    assert loaded.skipped == [] and len(loaded.traces) == REQUESTS
