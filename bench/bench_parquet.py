"""Parquet out (`traces export -f parquet`) beside JSONL out, per agent trace, in the same run.

Synthetic agent traces shaped like the demo's (an agent request with 2 tool calls, 1 retrieved
document, 2 plan steps, 1 model call with tokens, ~120 characters of question and answer, a
seed, a variant and two assigned attributes; 1 in 5 escalated), built once in memory. Each
writer runs in its own child process over the same traces, which reports the CPU time of the
write alone (building the traces is not counted), the file's bytes and the growth of peak RSS
while writing: the Parquet sink holds one row group (8,192 traces) at most, so its memory
should not grow with the number of traces. Then DuckDB answers a per-(seed, group) reduction
over the Parquet file (escalations and tool calls, counts), the kind of small table the gates
consume, timed on the same file.

    .venv/bin/python bench/bench_parquet.py                 # 50k and 200k traces, ~1 min
    .venv/bin/python bench/bench_parquet.py --quick         # 20k traces, ~15 s
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from spanguard_processor.traces.model import AgentTrace

WORDS = [
    "loan",
    "account",
    "card",
    "refund",
    "transfer",
    "balance",
    "fee",
    "limit",
    "branch",
    "statement",
]


def make_traces(count: int, seed: int = 7) -> list[AgentTrace]:
    rng = random.Random(seed)
    traces = []
    for i in range(count):
        words = " ".join(rng.choice(WORDS) for _ in range(12))
        traces.append(
            AgentTrace.from_dict(
                {
                    "trace_id": f"{rng.getrandbits(128):032x}",
                    "request_id": f"req-{i}",
                    "seed_id": f"seed-{i // 8}",
                    "variant_id": f"seed-{i // 8}::{i % 8}",
                    "assignments": {"gender": ("woman", "man")[i % 2], "age": str(20 + i % 4 * 20)},
                    "input": f"Can you help with my {words} {rng.randrange(10**8)}?",
                    "output": f"About {words}: {rng.randrange(10**6)} EUR, "
                    f"ref {rng.getrandbits(40):x}.",
                    "latency_ms": round(rng.uniform(200, 3000), 3),
                    "cost_usd": round(rng.uniform(0.0005, 0.01), 6),
                    "trace": {
                        "tool_calls": [{"name": "kb_search"}, {"name": "credit_check"}],
                        "retrieved_documents": [
                            {
                                "id": f"doc-{rng.randrange(500)}",
                                "group": "policy",
                                "rank": 1,
                                "score": round(rng.random(), 4),
                            }
                        ],
                        "plan_steps": ["look up policy", "answer"],
                        "escalated": i % 5 == 0,
                        "escalation_reason": "identity check" if i % 5 == 0 else None,
                    },
                    "source": ["spanguard"],
                    "llm_calls": [
                        {
                            "provider": "openai",
                            "request_model": "gpt-4o-mini",
                            "input_tokens": rng.randrange(200, 900),
                            "output_tokens": rng.randrange(20, 200),
                            "finish_reasons": ["stop"],
                            "duration_ms": 512.0,
                        }
                    ],
                }
            )
        )
    return traces


def child(kind: str, count: int, out: Path) -> None:
    traces = make_traces(count)
    import pyarrow.parquet  # noqa: F401  (its import is not the writer's memory)

    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.process_time()
    if kind == "parquet":
        from spanguard_processor.traces.parquet import ParquetSink

        with ParquetSink(out) as sink:
            for trace in traces:
                sink.add(trace)
            sink.close()
    else:
        from spanguard_processor.common.jsonio import dumps_line

        with out.open("w", encoding="utf-8") as stream:
            for trace in traces:
                stream.write(dumps_line(trace.to_dict()) + "\n")
    cpu = time.process_time() - start
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    growth_kib = rss_after - rss_before
    print(json.dumps({"cpu_s": cpu, "bytes": out.stat().st_size, "rss_growth_kib": growth_kib}))


def run_child(kind: str, count: int, out: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", kind, "--sizes", str(count), "--out", str(out)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def reduce_with_duckdb(path: Path) -> tuple[float, int]:
    import duckdb

    sql = f"""SELECT seed_id, assignments['gender'] AS grp, count(*) AS n,
                     sum(escalated::INT) AS escalations, sum(len(tool_calls)) AS tools
              FROM read_parquet('{path}') GROUP BY ALL ORDER BY ALL"""
    connection = duckdb.connect()
    start = time.perf_counter()
    rows = connection.sql(sql).fetchall()
    return time.perf_counter() - start, len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="50000,200000")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--child", choices=["parquet", "jsonl"])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.child:
        child(args.child, int(args.sizes), args.out)
        return
    sizes = [20_000] if args.quick else [int(s) for s in args.sizes.split(",")]
    print("| traces | writer | CPU µs/trace | bytes/trace | peak RSS growth while writing |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for count in sizes:
            for kind in ("jsonl", "parquet"):
                out = Path(folder) / f"traces-{count}.{kind}"
                got = run_child(kind, count, out)
                print(
                    f"| {count:,} | {kind} | {got['cpu_s'] / count * 1e6:.1f} | "
                    f"{got['bytes'] / count:.0f} | {got['rss_growth_kib'] / 1024:.1f} MiB |"
                )
            seconds, groups = reduce_with_duckdb(Path(folder) / f"traces-{count}.parquet")
            print(
                f"| {count:,} | DuckDB per-(seed, group) reduction over the Parquet file | "
                f"{seconds / count * 1e6:.2f} (wall) | {groups:,} rows out | |"
            )


if __name__ == "__main__":
    main()
