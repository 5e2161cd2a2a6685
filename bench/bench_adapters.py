"""What an adapter adds to a framework call, measured beside the bare call in the same run.

For each framework, the floor is the framework's own call (the fake chat model's ``invoke``,
the OpenAI client's ``chat.completions.create`` against a local stub server) inside a spanguard
request with span capture on; our figure is the adapted app's call in the same setting (the
same framework call plus the callback handler, the spans and the text extraction). Printed:
wall microseconds per call (median of --repeat rounds) and the ratio ours / floor.

    .venv/bin/python bench/bench_adapters.py --calls 300 --repeat 5
"""

from __future__ import annotations

import argparse
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
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
