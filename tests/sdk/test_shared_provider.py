"""configure() under a tracer provider the app already exports with (issue 40).

An app that set up its own SDK provider (or runs under ``opentelemetry-instrument``) and then
calls ``spanguard.configure()`` towards the same collector used to get a second pipeline on
that provider: every span after the call was exported twice (19 spans received for 10
distinct). spanguard now rides on the app's pipeline when it already sends to the same
destination, and says so once.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx
import pytest

from tests.serve_process import ServeProcess

APP = """
    import logging, sys
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    import spanguard

    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    url = sys.argv[1]
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=url)))
    trace.set_tracer_provider(provider)
    tracer = trace.get_tracer("app")
    with tracer.start_as_current_span("startup"):
        pass
    {configure}
    {configure}
    for i in range(3):
        with tracer.start_as_current_span("http request"):
            with spanguard.request("support", seed_id=f"s{{i}}", variant_id="a"):
                spanguard.plan_step("look up")
                with spanguard.llm_call("gpt-4o-mini"):
                    pass
    spanguard.shutdown()
    provider.shutdown()
"""


def _run_app(tmp_path: Path, configure: str) -> tuple[dict[str, int], str]:
    serve = ServeProcess(tmp_path / "spans.db", "--wait-duration", "0.2")
    try:
        clean = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("OTEL_") and k != "SPANGUARD_STRICT"
        }
        code = textwrap.dedent(APP).format(configure=configure)
        run = subprocess.run(
            [sys.executable, "-c", code, serve.url + "/v1/traces"],
            capture_output=True,
            text=True,
            timeout=120,
            env=clean,
        )
        assert run.returncode == 0, run.stderr
        serve.wait_idle(10)
        health: dict[str, int] = httpx.get(serve.url + "/health").json()
    finally:
        serve.terminate()
    return health, run.stderr


def test_configure_to_the_apps_own_destination_exports_each_span_once(tmp_path: Path) -> None:
    health, log = _run_app(
        tmp_path,
        "spanguard.configure(exporter='otlp-http', endpoint=url.removesuffix('/v1/traces'))",
    )
    # 1 startup span + 3 × (http request, request, llm_call) = 10 distinct spans
    assert health["spans_received"] == 10
    assert health["spans_duplicated"] == 0
    assert log.count("already exports to") == 1, log


AUTO_APP = """
    import logging, sys
    from opentelemetry import trace
    import spanguard

    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    tracer = trace.get_tracer("app")
    with tracer.start_as_current_span("startup"):
        pass
    spanguard.configure()
    for i in range(3):
        with tracer.start_as_current_span("http request"):
            with spanguard.request("support", seed_id=f"s{i}", variant_id="a"):
                with spanguard.llm_call("gpt-4o-mini"):
                    pass
    spanguard.shutdown()
"""


@pytest.mark.slow
def test_configure_under_opentelemetry_instrument_exports_each_span_once(tmp_path: Path) -> None:
    app = tmp_path / "app.py"
    app.write_text(textwrap.dedent(AUTO_APP), encoding="utf-8")
    serve = ServeProcess(tmp_path / "spans.db", "--wait-duration", "0.2")
    try:
        clean = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("OTEL_") and k != "SPANGUARD_STRICT"
        }
        env = {
            **clean,
            "OTEL_TRACES_EXPORTER": "otlp",
            "OTEL_METRICS_EXPORTER": "none",
            "OTEL_LOGS_EXPORTER": "none",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_EXPORTER_OTLP_ENDPOINT": serve.url,
            "OTEL_BSP_SCHEDULE_DELAY": "50",
        }
        instrument = Path(sys.executable).with_name("opentelemetry-instrument")
        run = subprocess.run(
            [str(instrument), sys.executable, str(app)],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert run.returncode == 0, run.stderr
        serve.wait_idle(10)
        health = httpx.get(serve.url + "/health").json()
    finally:
        serve.terminate()
    assert (health["spans_received"], health["spans_duplicated"]) == (10, 0)
    assert run.stderr.count("already exports to") == 1, run.stderr
