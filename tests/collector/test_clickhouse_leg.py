"""The ClickHouse leg of otel-config.clickhouse.yaml, run with a real collector: spans from the
OpenTelemetry SDK go through the rotel collector's ClickHouse exporter into ClickHouse's engine
(chDB behind ClickHouse's HTTP insert protocol, tests/collector/clickhouse_http.py), in the
table the Collector's `clickhouse` exporter creates; the same spans go through another rotel to
`spanguard serve`. rotel 0.0.1a15 takes one exporter per pipeline, so each leg has its own
collector here; the one-pipeline fan-out of the config file is checked, not run (no otelcol or
ClickHouse server can be installed here: test_otel_config_clickhouse.py).

Both legs must hold the same requests: ClickHouse SQL over the exporter's `otel_traces` and over
serve's store exported to Parquet (`traces export -f parquet`) give the same trace ids, request
ids, seeds and tool calls in order."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from spanguard import semconv as sc
from spanguard_processor.cli import cli
from tests.agent_app import SPANS_PER_REQUEST, run_request
from tests.serve_process import ServeProcess, free_port

from .test_collector import rotel_binary, rotel_collector

pytestmark = [pytest.mark.integration, pytest.mark.slow]
REQUESTS = 12

pytest.importorskip("chdb")
pytest.importorskip("pyarrow")
from .clickhouse_http import ClickHouseHttp  # noqa: E402  (needs chdb)


@contextmanager
def rotel_to_clickhouse(folder: Path, endpoint: str) -> Iterator[int]:
    """rotel with its ClickHouse exporter (database otel, tables otel_*), uncompressed."""
    folder.mkdir()
    grpc_in = free_port()
    proc = subprocess.Popen(
        [
            str(rotel_binary()),
            "start",
            "--otlp-grpc-endpoint",
            f"127.0.0.1:{grpc_in}",
            "--otlp-http-endpoint",
            f"127.0.0.1:{free_port()}",
            "--exporter",
            "clickhouse",
            "--clickhouse-exporter-endpoint",
            endpoint,
            "--clickhouse-exporter-compression",
            "none",
            "--pid-file",
            str(folder / "rotel.pid"),
            "--log-file",
            str(folder / "rotel.log"),
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


# per trace: its id, the root's request id and seed, the tool spans' names in time order
TOOL = f"SpanAttributes['{sc.GEN_AI_TOOL_NAME}']"
FROM_EXPORTER_TABLE = f"""
SELECT TraceId,
       anyIf(SpanAttributes['{sc.REQUEST_ID}'], ParentSpanId = ''),
       anyIf(SpanAttributes['{sc.SEED_ID}'], ParentSpanId = ''),
       arrayMap(x -> x.2, arraySort(groupArrayIf((Timestamp, {TOOL}),
                                    mapContains(SpanAttributes, '{sc.GEN_AI_TOOL_NAME}'))))
FROM otel.otel_traces GROUP BY TraceId ORDER BY TraceId"""
FROM_PARQUET = """
SELECT trace_id, request_id, seed_id, arrayMap(t -> t.name, tool_calls)
FROM file('{path}', Parquet) ORDER BY trace_id"""


def test_the_same_requests_reach_clickhouse_and_serve(tmp_path: Path) -> None:
    store, spans = tmp_path / "spans.db", REQUESTS * SPANS_PER_REQUEST
    server = ServeProcess(store, "--wait-duration", "0.3")
    try:
        with (
            ClickHouseHttp() as clickhouse,
            rotel_collector(tmp_path, "grpc", server) as to_serve,
            rotel_to_clickhouse(tmp_path / "ch", clickhouse.endpoint) as to_clickhouse,
        ):
            provider = TracerProvider()
            for port in (to_serve, to_clickhouse):
                exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{port}", insecure=True)
                provider.add_span_processor(BatchSpanProcessor(exporter))
            tracer = provider.get_tracer("warehouse-test")
            ids = [run_request(tracer, i) for i in range(REQUESTS)]
            provider.shutdown()
            server.wait_idle(spans)
            assert clickhouse.wait_for_rows("otel_traces", spans) == spans
            assert clickhouse.errors == []
            table = tmp_path / "traces.parquet"
            result = CliRunner().invoke(
                cli, ["traces", "export", "--store", str(store), "-f", "parquet", "-o", str(table)]
            )
            assert result.exit_code == 0, result.output
            from_exporter = clickhouse.query(FROM_EXPORTER_TABLE)
            from_store = clickhouse.query(FROM_PARQUET.format(path=table))
    finally:
        server.terminate()
    assert sorted(row[1] for row in from_exporter) == sorted(ids)
    assert from_exporter == from_store
    assert all(row[3] != "[]" for row in from_exporter)  # the tool calls are there to compare
