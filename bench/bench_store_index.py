"""CPU per span of the store's SQLite index, beside alternatives measured in the same run.

The span store indexes every span with one row (``WITHOUT ROWID``, key (trace_id, span_id)),
committed with ``synchronous=FULL`` in WAL mode, ``--batch`` spans per commit. This measures
that layout, the same with tuning a store could apply (``synchronous=NORMAL``/``OFF``, a 64 MiB
page cache, sorted inserts), and a coarser index of one row per (trace, batch) holding the
batch's span ids of that trace — the alternative discussed in docs/benchmarks-processor.md.
Rows are synthetic: random 16-byte trace ids, 5 spans per trace. Medians of --repeat runs.

    .venv/bin/python bench/bench_store_index.py        # ~30 s
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SPANS = """CREATE TABLE spans (trace_id TEXT NOT NULL, span_id TEXT NOT NULL,
    parent_span_id TEXT NOT NULL, start_ns INTEGER NOT NULL, annotation INTEGER NOT NULL,
    batch_id INTEGER NOT NULL, position INTEGER NOT NULL, PRIMARY KEY (trace_id, span_id))
    WITHOUT ROWID"""
TRACE_BATCHES = """CREATE TABLE trace_batches (trace_id TEXT NOT NULL, batch_id INTEGER NOT NULL,
    spans BLOB NOT NULL, PRIMARY KEY (trace_id, batch_id)) WITHOUT ROWID"""
PER_SPAN = "INSERT INTO spans VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
PER_TRACE = "INSERT INTO trace_batches VALUES (?, ?, ?) ON CONFLICT DO NOTHING"

Row = tuple[str, str, str, int, int, int, int]


def make_rows(count: int, per_trace: int, batch: int) -> list[Row]:
    rnd = random.Random(1)
    traces = [rnd.randbytes(16).hex() for _ in range(count // per_trace + 1)]
    return [
        (traces[i // per_trace], rnd.randbytes(8).hex(), "", i, 0, i // batch, i % batch)
        for i in range(count)
    ]


def per_trace_rows(rows: list[Row]) -> list[tuple[str, int, bytes]]:
    groups: dict[tuple[str, int], list[bytes]] = {}
    for trace, span, _, _, _, batch, _ in rows:
        groups.setdefault((trace, batch), []).append(bytes.fromhex(span))
    return [(trace, batch, b"".join(ids)) for (trace, batch), ids in groups.items()]


def run(
    rows: list[Row],
    batch: int,
    schema: str,
    sql: str,
    make: Callable[[list[Row]], Any],
    pragmas: tuple[str, ...] = (),
    sync: str = "FULL",
) -> float:
    """CPU microseconds per span to index ``rows``, ``batch`` spans per commit."""
    with tempfile.TemporaryDirectory() as folder:
        db = sqlite3.connect(Path(folder) / "index.db", isolation_level=None)
        for pragma in pragmas:
            db.execute(pragma)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={sync}")
        db.execute(schema)
        start = time.process_time()
        for i in range(0, len(rows), batch):
            db.execute("BEGIN IMMEDIATE")
            db.executemany(sql, make(rows[i : i + batch]))
            db.execute("COMMIT")
        spent = time.process_time() - start
        db.close()
    return spent / len(rows) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=60_000)
    parser.add_argument("--batch", type=int, default=512, help="spans per commit")
    parser.add_argument("--per-trace", type=int, default=5, help="spans per trace")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = make_rows(args.spans, args.per_trace, args.batch)
    same = lambda rs: rs  # noqa: E731
    candidates: dict[str, Callable[[], float]] = {
        "per span (the store today)": lambda: run(rows, args.batch, SPANS, PER_SPAN, same),
        "per span, sorted inserts": lambda: run(rows, args.batch, SPANS, PER_SPAN, sorted),
        "per span, 64 MiB cache": lambda: run(
            rows, args.batch, SPANS, PER_SPAN, same, ("PRAGMA cache_size=-65536",)
        ),
        "per span, synchronous=NORMAL": lambda: run(
            rows, args.batch, SPANS, PER_SPAN, same, sync="NORMAL"
        ),
        "per span, synchronous=OFF (not durable)": lambda: run(
            rows, args.batch, SPANS, PER_SPAN, same, sync="OFF"
        ),
        "per (trace, batch)": lambda: run(
            rows, args.batch, TRACE_BATCHES, PER_TRACE, per_trace_rows
        ),
    }
    samples: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(args.repeat):  # alternating rounds: machine load hits every layout alike
        for name, measure in candidates.items():
            samples[name].append(measure())
    base = statistics.median(samples["per span (the store today)"])
    print(
        f"{args.spans} spans, {args.per_trace} per trace, {args.batch} per commit "
        f"(WAL, synchronous=FULL unless said); CPU µs per span, median of {args.repeat}"
    )
    for name, values in samples.items():
        value = statistics.median(values)
        print(f"  {name:42} {value:6.2f} µs   {value / base:5.2f} of today's")


if __name__ == "__main__":
    main()
