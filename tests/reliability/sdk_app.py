"""An agent app for the SDK fault-injection tests, run as a subprocess (not under pytest).

``python -m tests.reliability.sdk_app MODE ENDPOINT REQUESTS`` with MODE one of ``valid``,
``invalid`` (every spanguard call gets wrong-typed or absurd values) and ``sigterm`` (like
valid, then prints READY and waits to be terminated). It prints one JSON line: requests run,
exceptions the app saw, spans ended, and per-request latency percentiles in microseconds.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import spanguard

SPANS_PER_REQUEST = 3  # request, tool, retrieval


@spanguard.tool
def lookup(account: Any) -> Any:
    return {"account": account, "unserialisable": object()}


@spanguard.retrieval(source="kb")
def search(query: Any) -> list[Any]:
    return [{"id": "doc-1", "group": "policy", "rank": 1, "score": 0.9}]


@spanguard.retrieval(source="kb")
def search_badly(query: Any) -> Any:
    return [{"id": object(), "rank": "first", "score": "high"}, 42, None, "text"]


def valid_request(index: int) -> None:
    with spanguard.request(
        "support",
        seed_id=f"s{index}",
        variant_id=f"s{index}-a",
        assignments={"gender": "woman"},
        input="reset my password",
    ) as req:
        search("password")
        lookup(index)
        spanguard.plan_step("answer")
        spanguard.friction("extra identity check")
        req.set_output("use the reset link")


def invalid_request(index: int) -> None:
    with spanguard.request(
        "support",
        seed_id=123,
        variant_id=object(),  # type: ignore[arg-type]
        assignments={"gender": object(), 5: [1]},  # type: ignore[dict-item]
        repeat="many",
        input=object(),
    ) as req:  # type: ignore[arg-type]
        search_badly({"q": object()})
        lookup(float("nan"))
        spanguard.plan_step(["not", "a", "string"])  # type: ignore[arg-type]
        spanguard.friction(None)  # type: ignore[arg-type]
        spanguard.escalate(reason=12345)  # type: ignore[arg-type]
        spanguard.record_documents("not documents")
        req.set_metadata("score", {1, 2})
        req.set_cost("free")  # type: ignore[arg-type]
        req.feedback(object())
        req.expect(min_chars="ten", contains=object())
        req.set_output(b"\xff\xfe bytes")
        with spanguard.llm_call(None) as call:  # type: ignore[arg-type]
            call.record_usage("many", -1)  # type: ignore[arg-type]
            call.set_input(object())
    spanguard.feedback(None, "thumbs_up")  # type: ignore[arg-type]
    spanguard.mark_retried(12)  # type: ignore[arg-type]


def main() -> None:
    mode, endpoint, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    # in sigterm mode nothing is exported on schedule: only the SIGTERM flush can save the spans
    delay = 600_000 if mode == "sigterm" else 500
    spanguard.configure(
        service_name="fault-app",
        exporter="otlp-grpc",
        endpoint=endpoint,
        capture_content=True,
        schedule_delay_millis=delay,
    )
    run = invalid_request if mode == "invalid" else valid_request
    errors: list[str] = []
    latencies: list[float] = []
    for index in range(count):
        started = time.perf_counter()
        try:
            run(index)
        except Exception as exc:  # the promise: never reached
            errors.append(f"{type(exc).__name__}: {exc}")
        latencies.append((time.perf_counter() - started) * 1e6)
    latencies.sort()
    stats = spanguard.export_stats(flush=False)
    print(
        json.dumps(
            {
                "requests": count,
                "errors": errors[:5],
                "error_count": len(errors),
                "ended": stats.ended,
                "p50_us": round(latencies[len(latencies) // 2], 1),
                "p99_us": round(latencies[int(len(latencies) * 0.99)], 1),
                "max_us": round(latencies[-1], 1),
            }
        ),
        flush=True,
    )
    if mode == "sigterm":
        print("READY", flush=True)
        time.sleep(120)


if __name__ == "__main__":
    main()
