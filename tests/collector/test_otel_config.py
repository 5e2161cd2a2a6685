"""otel-config.yaml and otel-config.scaleout.yaml: the pipelines the docs describe, and every
component and key one that the Collector defines (tests/data/otel/otelcol-keys.yaml, taken
from the Collector's sources; no collector binary can be downloaded here to start them)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "otel-config.yaml"
SCALEOUT = ROOT / "otel-config.scaleout.yaml"
KEYS = Path(__file__).parents[1] / "data" / "otel" / "otelcol-keys.yaml"
ROLES = ("receivers", "processors", "exporters")
ENV_REFERENCE = re.compile(r"\$\{([^}]*)\}")


def _schema(role: str, kind: str) -> dict[str, Any] | None:
    entry = yaml.safe_load(KEYS.read_text())[role].get(kind)
    if isinstance(entry, dict) and "keys" in entry:
        return entry["keys"]  # type: ignore[no-any-return]
    return entry  # type: ignore[no-any-return]


def _unknown_keys(value: Any, schema: Any, path: str) -> list[str]:
    if not isinstance(value, dict):
        return (
            []
            if schema is None or not isinstance(schema, dict) or "*" in schema
            else [f"{path}: a scalar where the Collector expects a mapping"]
        )
    if not isinstance(schema, dict):
        return [f"{path}: a mapping where the Collector expects a scalar"]
    problems = []
    for key, item in value.items():
        if key in schema:
            problems += _unknown_keys(item, schema[key], f"{path}.{key}")
        elif "*" not in schema:
            problems.append(f"{path}.{key}: not a key of this component")
    return problems


def check_config(path: Path) -> list[str]:
    """Every problem a collector would refuse at start: unknown types or keys, pipelines naming
    undefined components, malformed ${env:...} references."""
    config = yaml.safe_load(path.read_text())
    problems = []
    for role in ROLES:
        for component_id, settings in (config.get(role) or {}).items():
            kind = component_id.split("/", 1)[0]
            schema = _schema(role, kind)
            if schema is None:
                problems.append(f"{role}.{component_id}: unknown component type {kind!r}")
                continue
            problems += _unknown_keys(settings or {}, schema, f"{role}.{component_id}")
    for name, pipeline in config["service"]["pipelines"].items():
        for role in ROLES:
            for component_id in pipeline.get(role, []):
                if component_id not in (config.get(role) or {}):
                    problems.append(f"pipeline {name}: {component_id} is not defined under {role}")
    for reference in ENV_REFERENCE.findall(path.read_text()):
        if not re.fullmatch(r"env:[A-Z_][A-Z0-9_]*(:-[^}]*)?", reference):
            problems.append(f"${{{reference}}} is not an ${{env:NAME}} or ${{env:NAME:-default}}")
    return problems


@pytest.mark.parametrize("path", [CONFIG, SCALEOUT], ids=lambda p: p.name)
def test_every_component_and_key_exists_in_the_collector(path: Path) -> None:
    assert check_config(path) == []


def test_the_checker_catches_what_a_collector_refuses(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        CONFIG.read_text()
        .replace("wait_duration: 5s", "wait_for: 5s")
        .replace("  otlp_http/spanguard:", "  otlphttps/spanguard:")
        .replace("${env:SPANGUARD_ENDPOINT:-", "${SPANGUARD_ENDPOINT:-")
    )
    problems = check_config(bad)
    assert "processors.groupbytrace.wait_for: not a key of this component" in problems
    assert "exporters.otlphttps/spanguard: unknown component type 'otlphttps'" in problems
    assert any("is not an ${env:NAME}" in p for p in problems)


def test_pipelines_write_raw_files_and_forward_grouped_batched_traces() -> None:
    config = yaml.safe_load(CONFIG.read_text())
    pipelines = config["service"]["pipelines"]
    assert pipelines["traces/raw"] == {
        "receivers": ["otlp"],
        "processors": ["memory_limiter", "batch"],
        "exporters": ["file"],
    }
    # groupbytrace releases each trace alone; batch after it sends several per request
    assert pipelines["traces/assembled"] == {
        "receivers": ["otlp"],
        "processors": ["memory_limiter", "groupbytrace", "batch"],
        "exporters": ["otlp_http/spanguard"],
    }
    assert config["processors"]["groupbytrace"]["wait_duration"] == "5s"
    assert config["exporters"]["file"]["format"] == "json"
    assert config["exporters"]["otlp_http/spanguard"]["endpoint"].endswith("http://127.0.0.1:5318}")


def test_scaleout_routes_whole_traces_to_reachable_replicas_with_a_token() -> None:
    config = yaml.safe_load(SCALEOUT.read_text())
    pipelines = config["service"]["pipelines"]
    assert set(pipelines) == {"traces/assembled", "logs"}
    pipeline = pipelines["traces/assembled"]
    assert pipeline["exporters"] == ["load_balancing"]
    # log records (GenAI content, evaluation results) go where their trace's spans go
    assert pipelines["logs"] == {
        "receivers": ["otlp"],
        "processors": ["memory_limiter", "batch"],
        "exporters": ["load_balancing"],
    }
    assert pipeline["processors"] == ["memory_limiter", "groupbytrace", "batch"]
    balancer = config["exporters"]["load_balancing"]
    assert balancer["routing_key"] == "traceID"
    assert balancer["protocol"]["otlp"]["headers"]["authorization"].startswith("Bearer ${env:")
    hostnames = balancer["resolver"]["static"]["hostnames"]
    assert hostnames and all(h.endswith(":5317") for h in hostnames)  # not the collector's 4317
    text = SCALEOUT.read_text()
    assert "--host 0.0.0.0 --grpc-port 5317" in text and "--token-file" in text


@pytest.mark.parametrize(
    ("path", "minimum"), [(CONFIG, "v0.144.0"), (SCALEOUT, "v0.153.0")], ids=["main", "scaleout"]
)
def test_minimum_and_checked_collector_versions_are_stated(path: Path, minimum: str) -> None:
    header = path.read_text().split("\n\n", 1)[0]
    assert f"otelcol-contrib {minimum} or later" in header
    assert "v0.159.0" in header
    docs = (ROOT / "docs" / "collector.md").read_text()
    assert minimum in docs and "v0.159.0" in docs
