"""One instrumented app's turns (tests/adapters/instrumented_turn.py) against the local OpenAI
stub, their spans sent over OTLP to a real ``spanguard serve`` storing them at a SQLite file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.serve_process import ServeProcess

from .openai_stub import openai_stub
from .test_instrumentors import ANSWER, TURN, responder


def serve_turns(
    store: Path,
    instrumentor: str,
    spans: int,
    turns: int | None = None,
    env: dict[str, str] | None = None,
) -> list[Any]:
    """Run ``turns`` turns (the app's default: one) instrumented by ``instrumentor`` with the
    environment plus ``env``, and wait until serve has stored ``spans`` spans at ``store``;
    returns the requests the stub received. The app must succeed and print the answer."""
    serve = ServeProcess(store, "--wait-duration", "0.2")
    try:
        with openai_stub(responder) as stub:
            run = subprocess.run(
                [
                    sys.executable,
                    str(TURN),
                    instrumentor,
                    serve.url + "/v1/traces",
                    stub.base_url,
                    *([] if turns is None else [str(turns)]),
                ],
                env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert run.returncode == 0, run.stderr
            assert run.stdout.strip() == ANSWER
            requests = list(stub.requests)
        serve.wait_idle(spans)
    finally:
        serve.terminate()
    return requests
