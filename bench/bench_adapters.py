"""What an adapter adds to a framework call, measured beside the bare call in the same run.

For each framework, the floor is the framework's own call (the fake chat model's ``invoke``,
the OpenAI client's ``chat.completions.create`` against a local stub server) inside a spanguard
request with span capture on; our figure is the adapted app's call in the same setting (the
same framework call plus the callback handler, the spans and the text extraction). Printed:
wall microseconds per call (median of --repeat rounds) and the ratio ours / floor.

The harness line compares the two commands that call an app in-process, in the same run, per
app call, on an app that calls one decorated tool: the ``spanguard run`` harness (``run_app``:
the calls, span capture, assembly, the observations), the ``cases run --app`` replay
(``replay_cases``: the same calls and capture, the evidence) and the replay with its scoring
(``score_repeats``: the checks and the run file's repeats). Overhead is each one's time minus
the bare app's in a request (CPU time, measured in the same rounds); each ratio ÷ run is the
median of the rounds' ratios (target ≤ 1, issue 46).

    .venv/bin/python bench/bench_adapters.py --calls 300 --repeat 5
    .venv/bin/python bench/bench_adapters.py --harness-only --calls 400 --repeat 7
"""

from __future__ import annotations

import argparse
import gc
import itertools
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import openai
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

import spanguard
from spanguard.testing import SpanCapture
from spanguard_processor.adapters import langchain_runnable, openai_chat
from spanguard_processor.fairness.design.suite import Variant
from spanguard_processor.fairness.run.runner import run_app
from spanguard_processor.regression.case import Case
from spanguard_processor.regression.run.replay import replay_cases
from spanguard_processor.regression.run.run import score_repeats
from tests.adapters.openai_stub import chat_completion, openai_stub


def _per_call_us(fn: Callable[[], Any], calls: int) -> float:
    with SpanCapture() as capture:
        start = time.perf_counter()
        for _ in range(calls):
            with spanguard.request("bench", assignments={"g": "a"}):
                fn()
        elapsed = time.perf_counter() - start
        capture.exporter.clear()
    return elapsed / calls * 1e6


def _pair(
    name: str, floor: Callable[[], Any], ours: Callable[[], Any], calls: int, repeat: int
) -> None:
    floors, adapted = [], []
    for _ in range(repeat):  # interleaved, so both see the same machine load
        floors.append(_per_call_us(floor, calls))
        adapted.append(_per_call_us(ours, calls))
    f, o = statistics.median(floors), statistics.median(adapted)
    print(f"{name:<28} floor {f:9.1f} us/call   adapter {o:9.1f} us/call   ratio {o / f:5.2f}")


@spanguard.tool(name="lookup")
def _lookup(question: str) -> str:
    return "Refunds take 5 days."


def _bench_app(prompt: str) -> str:
    return _lookup(prompt)


def _harness(calls: int, repeat: int) -> None:
    """Per app call: the run harness and the replay, both minus the bare app, in one run."""
    variants = [
        Variant(f"s{i}::{g}", f"s{i}", f"Refund {i}?", {"g": g})
        for i in range(calls // 2)
        for g in "ab"
    ]
    cases = [
        Case.from_dict(
            {
                "id": f"case-{i}",
                "input": f"Refund {i}?",
                "checks": [{"type": "min_chars", "value": 5}],
                "trace_checks": [{"type": "tools_include", "value": ["lookup"]}],
            }
        )
        for i in range(len(variants))
    ]

    def bare() -> None:
        with SpanCapture() as capture:
            for v in variants:
                with spanguard.request("bench"):
                    _bench_app(v.prompt)
            capture.exporter.clear()

    def run() -> None:
        run_app(_bench_app, variants)

    def replay() -> None:
        replay_cases(cases, _bench_app)

    def replay_scored() -> None:
        score_repeats(cases, replay_cases(cases, _bench_app).evidence)

    candidates = {"bare": bare, "run": run, "replay": replay, "scored": replay_scored}
    timings: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(repeat):  # interleaved, so every candidate sees the same machine load
        for name, fn in candidates.items():
            gc.collect()
            start = time.process_time()  # CPU time: other jobs on the machine add no wall time
            fn()
            timings[name].append((time.process_time() - start) / len(variants) * 1e6)

    def overhead(name: str) -> list[float]:
        return [t - floor for t, floor in zip(timings[name], timings["bare"], strict=True)]

    def ratio(name: str) -> float:  # the median of the rounds' ratios: load moves both alike
        return statistics.median(
            o / r for o, r in zip(overhead(name), overhead("run"), strict=True)
        )

    floor = statistics.median(timings["bare"])
    print(
        f"{'harness (per app call, CPU)':<28} bare app in a request {floor:7.1f} us; overhead: "
        f"run harness +{statistics.median(overhead('run')):.1f} us, "
        f"replay harness +{statistics.median(overhead('replay')):.1f} us "
        f"(ratio replay/run {ratio('replay'):4.2f}), "
        f"replay + scoring +{statistics.median(overhead('scored')):.1f} us "
        f"(ratio {ratio('scored'):4.2f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--harness-only", action="store_true", help="Only the run-vs-replay harness line."
    )
    args = parser.parse_args()
    _harness(args.calls, args.repeat)
    if args.harness_only:
        return
    script = [
        AIMessage(
            content="Refunds take 5 days.",
            usage_metadata={"input_tokens": 9, "output_tokens": 5, "total_tokens": 14},
        )
    ]
    model = GenericFakeChatModel(messages=itertools.cycle(script))
    app = langchain_runnable(model)
    _pair(
        "langchain fake chat model",
        lambda: model.invoke("Refund?"),
        lambda: app("Refund?", {"g": "a"}),
        args.calls,
        args.repeat,
    )
    with openai_stub(lambda path, body: chat_completion("Refunds take 5 days.")) as stub:
        client = openai.OpenAI(base_url=stub.base_url, api_key="bench", max_retries=0)
        chat = openai_chat(client, model="gpt-4o-mini")
        _pair(
            "openai chat (local stub)",
            lambda: client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "Refund?"}]
            ),
            lambda: chat("Refund?", {"g": "a"}),
            args.calls,
            args.repeat,
        )
        client.close()


if __name__ == "__main__":
    main()
