"""An app instrumented by OpenTelemetry JS's ``@opentelemetry/instrumentation-openai`` (Node),
over OTLP/HTTP to ``spanguard serve`` (issue 40's instrumentor table).

tests/adapters/otel_js/ holds the turn (``turn.js``: the same "Weather in Paris?" turn under a
parent span, with the real npm ``openai`` client against the stub) and its pinned packages
(``package-lock.json``), installed with ``npm ci`` into a temporary folder once per session.
The JS instrumentation records the model calls (model, tokens, finish reasons) on spans and
the messages only as log events, so the trace has no text and the requested tool is not seen
— whatever the content settings; docs/adapters.md says so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from spanguard_processor.inputs.readers import read_agent_traces_any
from tests.serve_process import ServeProcess

from .openai_stub import openai_stub
from .test_instrumentors import ANSWER, responder

pytestmark = pytest.mark.integration

JS = Path(__file__).with_name("otel_js")


@pytest.fixture(scope="module")
def node_app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are not installed")
    folder = tmp_path_factory.mktemp("otel_js")
    for name in ("package.json", "package-lock.json", "turn.js"):
        shutil.copy(JS / name, folder / name)
    install = subprocess.run(
        ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr
    return folder / "turn.js"


@pytest.mark.slow
@pytest.mark.parametrize(
    "settings",
    [
        {},
        {
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
            "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
        },
    ],
    ids=["default", "content-and-opt-in"],
)
def test_otel_js_openai_turn_gives_model_calls_without_text(
    node_app: Path, settings: dict[str, str], tmp_path: Path
) -> None:
    serve = ServeProcess(tmp_path / "spans.db", "--wait-duration", "0.2")
    try:
        with openai_stub(responder) as stub:
            env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")} | settings
            run = subprocess.run(
                ["node", str(node_app), serve.url + "/v1/traces", stub.base_url],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert run.returncode == 0, run.stderr
            assert run.stdout.strip() == ANSWER
            assert len(stub.requests) == 2
        serve.wait_idle(3)
    finally:
        serve.terminate()
    (trace,) = list(read_agent_traces_any([tmp_path / "spans.db"]))
    assert len(trace.llm_calls) == 2
    assert trace.usage["models"] == ["gpt-4o-mini-2024-07-18"]
    assert (trace.usage["input_tokens"], trace.usage["output_tokens"]) == (109, 28)
    assert [c.finish_reasons for c in trace.llm_calls] == [("tool_calls",), ("stop",)]
    assert (trace.input, trace.output, trace.trace.tool_calls) == (None, None, ())
