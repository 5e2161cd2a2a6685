"""otel-config.clickhouse.yaml: one pipeline into ClickHouse (the `clickhouse` exporter) and into
`spanguard serve`, every key one the exporter's Config struct defines
(tests/data/otel/otelcol-keys.yaml). No ClickHouse server or otelcol binary can be
installed here, so the file is checked, not run; the serve leg is the same `otlp_http` exporter
the main config uses (forwarding to serve is run with the rotel collector in
tests/collector/test_collector.py)."""

from __future__ import annotations

from pathlib import Path

import yaml

from .test_otel_config import check_config

ROOT = Path(__file__).resolve().parents[2]
CLICKHOUSE = ROOT / "otel-config.clickhouse.yaml"
SERVE_MAX_PENDING_SPANS = 50_000  # `spanguard serve --max-pending-spans` default


def test_every_component_and_key_exists_in_the_collector() -> None:
    assert check_config(CLICKHOUSE) == []


def test_one_pipeline_feeds_clickhouse_and_the_live_store() -> None:
    config = yaml.safe_load(CLICKHOUSE.read_text())
    both = ["clickhouse", "otlp_http/spanguard"]
    assert config["service"]["pipelines"] == {
        "traces": {
            "receivers": ["otlp"],
            "processors": ["memory_limiter", "batch"],
            "exporters": both,
        },
        "logs": {
            "receivers": ["otlp"],
            "processors": ["memory_limiter", "batch"],
            "exporters": both,
        },
    }
    exporter = config["exporters"]["clickhouse"]
    # the tables the warehouse readers expect (docs/scale.md)
    assert (exporter["traces_table_name"], exporter["logs_table_name"]) == (
        "otel_traces",
        "otel_logs",
    )
    assert exporter["create_schema"] is True
    assert config["processors"]["batch"]["send_batch_max_size"] <= SERVE_MAX_PENDING_SPANS
    serve = config["exporters"]["otlp_http/spanguard"]["endpoint"]
    assert serve.endswith("http://127.0.0.1:5318}")


def test_the_checker_catches_a_key_the_clickhouse_exporter_does_not_have(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        CLICKHOUSE.read_text()
        .replace("traces_table_name:", "traces_table:")
        .replace("ttl: 720h", "ttl_days: 30")  # the key older releases had
        .replace("queue_size: 1000", "queue_length: 1000")
    )
    assert check_config(bad) == [
        "exporters.clickhouse.traces_table: not a key of this component",
        "exporters.clickhouse.ttl_days: not a key of this component",
        "exporters.clickhouse.sending_queue.queue_length: not a key of this component",
    ]


def test_versions_and_what_was_not_run_are_stated() -> None:
    header = CLICKHOUSE.read_text().split("\n\n", 1)[0]
    assert "otelcol-contrib v0.144.0 or later" in header
    assert "has not" in header and "been run end to end" in header
    docs = (ROOT / "docs" / "scale.md").read_text()
    assert "otel-config.clickhouse.yaml" in docs and "v0.144.0" in docs
