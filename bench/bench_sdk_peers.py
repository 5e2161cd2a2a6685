"""``@spanguard.tool`` side by side with traceloop-sdk's ``@tool`` and OpenInference's
``@tracer.tool`` on the same function, each with a batch processor and a null exporter.

The peers are installed only in a separate benchmark venv (never in the project's deps)::

    python3 -m venv /work/bench-venv
    /work/bench-venv/bin/pip install opentelemetry-sdk==1.45.2 opentelemetry-exporter-otlp==1.45.2 \
        openinference-instrumentation
    /work/bench-venv/bin/pip install --no-deps traceloop-sdk==0.62.4   # its instrumentation pins
    # then its plain deps: colorama cuid deprecated jinja2 pydantic tenacity httpx aiohttp
    # opentelemetry-semantic-conventions-ai opentelemetry-instrumentation(-logging,-threading,...)
    PYTHONPATH=sdk/src /work/bench-venv/bin/python bench/bench_sdk_peers.py

Each tracer runs in its own fresh interpreter (traceloop sets the global provider), measured
in alternating rounds; figures are medians of CPU time per call, with content capture off for
all three and then on for all three.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

SETUP = {
    "spanguard": """
import spanguard
spanguard.configure(exporter=NullExporter(), private=True, capture_content=CONTENT)

@spanguard.tool
def lookup(order_id):
    return {"order": order_id, "status": "shipped"}
""",
    "traceloop": """
import os
os.environ["TRACELOOP_TRACE_CONTENT"] = "true" if CONTENT else "false"
os.environ["TRACELOOP_TELEMETRY"] = "false"
from traceloop.sdk import Traceloop
from traceloop.sdk.decorators import tool
Traceloop.init(app_name="bench", exporter=NullExporter(), disable_batch=False,
               telemetry_enabled=False, instruments=set())

@tool(name="lookup")
def lookup(order_id):
    return {"order": order_id, "status": "shipped"}
""",
    "openinference": """
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from openinference.instrumentation import OITracer, TraceConfig
provider = TracerProvider()
provider.add_span_processor(BatchSpanProcessor(NullExporter()))
tracer = OITracer(provider.get_tracer("bench"),
                  config=TraceConfig(hide_inputs=not CONTENT, hide_outputs=not CONTENT))

@tracer.tool
def lookup(order_id):
    return {"order": order_id, "status": "shipped"}
""",
}

MEASURE = """
import sys, json
sys.path.insert(0, {here!r})
from _bench_common import NullExporter, per_call_ns
CONTENT = {content}
{setup}
per_call_ns(lambda: lookup("42"), 2000)
print(json.dumps([per_call_ns(lambda: lookup("42"), {calls}) for _ in range({rounds})]))
"""


def measure(name: str, content: bool, calls: int = 5000, rounds: int = 3) -> list[float]:
    code = MEASURE.format(
        here=str(HERE), content=content, setup=SETUP[name], calls=calls, rounds=rounds
    )
    env = {**os.environ}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env
    )
    if result.returncode != 0:
        raise RuntimeError(f"{name}: {result.stderr[-2000:]}")
    values: list[float] = json.loads(result.stdout.strip().splitlines()[-1])
    return values


def main() -> None:
    import statistics

    for content in (False, True):
        samples: dict[str, list[float]] = {name: [] for name in SETUP}
        for _ in range(3):  # alternate the interpreters so load hits all alike
            for name in SETUP:
                samples[name].extend(measure(name, content))
        medians = {name: statistics.median(values) for name, values in samples.items()}
        ours = medians["spanguard"]
        label = "content on" if content else "content off"
        for name, value in medians.items():
            print(
                f"peers ({label}): {name:13s} {value / 1000:7.1f} µs CPU/call; "
                f"ratio to spanguard {value / ours:.2f}"
            )


if __name__ == "__main__":
    main()
