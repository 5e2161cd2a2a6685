"""configure(): validation, the app's provider preserved, exporters, flush at exit, the burst.

Tests that touch the process-global tracer provider run in a fresh interpreter each, because
OpenTelemetry allows setting it only once per process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import spanguard
from spanguard import ConfigError

from .rotel_helper import OtlpGrpcSink


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v for k, v in os.environ.items() if not k.startswith("OTEL_") and k != "SPANGUARD_STRICT"
    }
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**clean, **env},
    )
    assert result.returncode == 0, result.stderr
    return result


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"service_name": ""}, "service_name"),
        ({"exporter": "zipkin"}, "exporter"),
        ({"exporter": "otlp-json-file"}, "file_path"),
        ({"capture_content": "yes"}, "capture_content"),
        ({"redact": "not callable"}, "redact"),
        ({"max_queue_size": 0}, "max_queue_size"),
        ({"max_export_batch_size": 10, "max_queue_size": 5}, "max_export_batch_size"),
        ({"max_content_chars": True}, "max_content_chars"),
        ({"sampler": 0.5}, "sampler"),
        ({"endpoint": 3}, "endpoint"),
    ],
)
def test_invalid_arguments_raise_config_error_naming_the_parameter(
    kwargs: dict[str, Any], parameter: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        spanguard.configure(**kwargs)
    assert raised.value.parameter == parameter
    assert str(raised.value).startswith(f"{parameter}: ")
    assert isinstance(raised.value, ValueError)


def test_unsupported_environment_values_name_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "jaeger")
    with pytest.raises(ConfigError, match=r"^OTEL_TRACES_EXPORTER: "):
        spanguard.configure()
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
    with pytest.raises(ConfigError, match=r"^OTEL_EXPORTER_OTLP_PROTOCOL: "):
        spanguard.configure()


def test_the_apps_own_global_provider_is_kept_and_receives_the_spans() -> None:
    out = _run("""
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        import spanguard
        app_exporter = InMemorySpanExporter()
        app_provider = TracerProvider()
        app_provider.add_span_processor(SimpleSpanProcessor(app_exporter))
        trace.set_tracer_provider(app_provider)
        config = spanguard.configure(exporter="memory")
        assert trace.get_tracer_provider() is app_provider
        assert config.provider is app_provider and not config.owns_provider
        with trace.get_tracer("app").start_as_current_span("app work"):
            with spanguard.request("agent"):
                pass
        spanguard.force_flush()
        print(sorted(s.name for s in app_exporter.get_finished_spans()))
        print(sorted(s.name for s in config.exporter.get_finished_spans()))
    """).stdout.splitlines()
    assert out == ["['app work', 'invoke_agent agent']"] * 2


def test_without_an_app_provider_configure_sets_one() -> None:
    out = _run("""
        from opentelemetry import trace
        import spanguard
        config = spanguard.configure(exporter="memory", service_name="shop")
        assert trace.get_tracer_provider() is config.provider and config.owns_provider
        with spanguard.request("agent"):
            pass
        spanguard.force_flush()
        (span,) = config.exporter.get_finished_spans()
        print(span.resource.attributes["service.name"])
    """).stdout.strip()
    assert out == "shop"


def test_private_provider_leaves_the_global_one_alone() -> None:
    out = _run("""
        from opentelemetry import trace
        from opentelemetry.trace import ProxyTracerProvider
        import spanguard
        config = spanguard.configure(exporter="memory", private=True)
        assert isinstance(trace.get_tracer_provider(), ProxyTracerProvider)
        with spanguard.request("agent"):
            pass
        spanguard.force_flush()
        print(len(config.exporter.get_finished_spans()))
    """).stdout.strip()
    assert out == "1"


def test_otlp_json_file_is_flushed_at_exit_with_hex_ids(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    out = _run(f"""
        import spanguard
        spanguard.configure(exporter="otlp-json-file", file_path={str(path)!r},
                            schedule_delay_millis=60000)
        with spanguard.request("agent", seed_id="s1") as req:
            spanguard.escalate(reason="human please")
        print(req.trace_id)
        # no flush: the exit handler must export
    """).stdout.strip()
    lines = path.read_text().splitlines()
    assert len(lines) == 1
    request = json.loads(lines[0])
    span = request["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert span["traceId"] == out and len(span["spanId"]) == 16
    assert span["kind"] == 1  # integer enums as OTLP JSON requires
    assert span["events"][0]["name"] == "spanguard.escalation"
    seed = [a for a in span["attributes"] if a["key"] == "spanguard.seed_id"]
    assert seed == [{"key": "spanguard.seed_id", "value": {"stringValue": "s1"}}]


def test_console_exporter_from_the_environment() -> None:
    out = _run(
        """
        import spanguard
        spanguard.configure()
        with spanguard.request("agent"):
            pass
        spanguard.shutdown()
    """,
        OTEL_TRACES_EXPORTER="console",
    ).stdout
    assert '"name": "invoke_agent agent"' in out


def test_sampler_is_applied_to_a_provider_spanguard_creates() -> None:
    out = _run("""
        from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
        import spanguard
        config = spanguard.configure(exporter="memory", sampler=ALWAYS_OFF, private=True)
        with spanguard.request("agent"):
            pass
        print(len(config.exporter.get_finished_spans()), spanguard.export_stats())
    """).stdout.strip()
    assert out == "0 ExportStats(ended=0, exported=0, failed=0, dropped=0)"


BURST = """
    import sys, spanguard
    kwargs = {} if sys.argv[2] == "ours" else {"max_queue_size": 2048,
                                             "max_export_batch_size": 512,
                                             "schedule_delay_millis": 5000}
    spanguard.configure(exporter="otlp-grpc", endpoint=sys.argv[1], private=True, **kwargs)

    @spanguard.tool
    def step(i):
        return i

    for i in range(30_000):
        step(i)
    stats = spanguard.export_stats()
    print(stats.ended, stats.exported, stats.dropped)
"""


@pytest.mark.slow
@pytest.mark.integration
def test_a_30000_span_burst_loses_nothing_over_otlp_grpc() -> None:
    with OtlpGrpcSink() as sink:
        result = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(BURST), sink.endpoint, "ours"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.split() == ["30000", "30000", "0"]
        spans = sink.wait_for_spans(30_000, timeout=30)
    assert len(spans) == 30_000
    assert len({span.span_id for span in spans}) == 30_000
