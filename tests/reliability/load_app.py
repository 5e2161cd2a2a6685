"""One agent app of the load test: ``python -m tests.reliability.load_app ENDPOINT SECONDS RATE
NAME``. It runs ``RATE`` requests a second (4 spans each: request, retrieval, tool, LLM call)
for ``SECONDS`` seconds, exporting over OTLP/gRPC to ``ENDPOINT``, flushes, and prints one JSON
line with its request count and the SDK's export accounting (ended, exported, failed, dropped).
"""

from __future__ import annotations

import json
import sys
import time

import spanguard

SPANS_PER_REQUEST = 4


@spanguard.retrieval(source="kb")
def search(query: str) -> list[dict[str, object]]:
    return [
        {
            "id": f"doc-{rank}",
            "group": ("policy", "forum")[rank % 2],
            "rank": rank,
            "score": 1.0 / rank,
        }
        for rank in (1, 2, 3)
    ]


@spanguard.tool
def lookup(account: int) -> str:
    return f"account {account} is active"


def one_request(name: str, index: int) -> None:
    with spanguard.request(
        "support",
        request_id=f"{name}-{index:06d}",
        seed_id=f"s{index // 2}",
        variant_id=f"s{index // 2}-{index % 2}",
        assignments={"gender": ("woman", "man")[index % 2]},
    ) as req:
        search("reset password")
        lookup(index)
        with spanguard.llm_call("gpt-x") as call:
            call.record_usage(120, 40)
        req.set_output("use the reset link")


def main() -> None:
    endpoint, seconds, rate, name = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    spanguard.configure(service_name=name, exporter="otlp-grpc", endpoint=endpoint)
    started = time.monotonic()
    count = 0
    while True:
        due = started + count / rate
        now = time.monotonic()
        if now - started >= seconds:
            break
        if due > now:
            time.sleep(due - now)
        one_request(name, count)
        count += 1
    stats = spanguard.export_stats(flush=True)
    print(
        json.dumps(
            {
                "name": name,
                "requests": count,
                "ended": stats.ended,
                "exported": stats.exported,
                "failed": stats.failed,
                "dropped": stats.dropped,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
