"""otel-config.yaml: the pipelines the docs describe, every component they use defined."""

from __future__ import annotations

from pathlib import Path

import yaml

CONFIG = Path(__file__).resolve().parents[2] / "otel-config.yaml"


def test_pipelines_write_raw_files_and_forward_grouped_traces_to_spanguard() -> None:
    config = yaml.safe_load(CONFIG.read_text())
    pipelines = config["service"]["pipelines"]
    assert pipelines["traces/raw"] == {"receivers": ["otlp"],
                                       "processors": ["memory_limiter", "batch"],
                                       "exporters": ["file"]}
    assert pipelines["traces/assembled"] == {"receivers": ["otlp"],
                                             "processors": ["memory_limiter", "groupbytrace"],
                                             "exporters": ["otlphttp/spanguard"]}
    for pipeline in pipelines.values():
        for role in ("receivers", "processors", "exporters"):
            for name in pipeline[role]:
                assert name in config[role], f"{name} is used but not defined under {role}"
    assert config["processors"]["groupbytrace"]["wait_duration"] == "5s"
    assert config["exporters"]["file"]["format"] == "json"
    assert "compression" not in config["exporters"]["file"]  # zstd is not read by ingest
    assert config["exporters"]["otlphttp/spanguard"]["endpoint"].endswith(
        "http://127.0.0.1:5318}")
