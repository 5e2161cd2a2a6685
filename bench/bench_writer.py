"""CPU per span of the span writer's store work, in process, beside a per-batch index.

The same agent requests ``bench/bench_ingest.py`` sends (512 spans each, 5 per trace) are
decoded once as the receiver does, then stored as ``spanguard serve``'s writer stores them:

* acknowledging commits (:meth:`SpanStore.append_batches`, two requests per commit, as 4
  clients arrive together);
* index commits of 32 requests (:meth:`SpanStore.index_batches`: per trace and batch one
  ``trace_batches`` row, a ``traces`` upsert and a probe for earlier spans of that trace);
* release marks (one ``traces`` update per trace);

beside what an index of **one row per batch** would cost on the same commits (the batch's trace
groups packed into one blob, and one blob of released trace ids per commit): the store layout
that would take the per-trace rows off the writer (docs/benchmarks-processor.md says what it
would cost readers). CPU seconds of this process, per span; medians of --repeat runs.

    .venv/bin/python bench/bench_writer.py        # ~30 s
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_ingest import make_spans  # noqa: E402
from spanguard_processor.collector.limits import Shaper  # noqa: E402
from spanguard_processor.collector.store import SpanStore  # noqa: E402
from spanguard_processor.ingest.otlp_proto import parse_request  # noqa: E402
from spanguard_processor.ingest.spans import DecodedBatch  # noqa: E402

_PER_BATCH = """
CREATE TABLE batch_groups (batch_id INTEGER PRIMARY KEY, trace_ids BLOB NOT NULL,
                           groups BLOB NOT NULL);
CREATE TABLE releases (id INTEGER PRIMARY KEY, trace_ids BLOB NOT NULL);
"""


def one_run(batches: list[DecodedBatch], index_every: int) -> dict[str, float]:
    """CPU seconds per span of each part of the writer's store work, on a new store."""
    spans = sum(batch.count for batch in batches)
    cpu = time.process_time
    with tempfile.TemporaryDirectory() as folder:
        store = SpanStore(Path(folder) / "bench.db")
        stored = []
        start = cpu()
        for at in range(0, len(batches), 2):
            stored.extend(store.append_batches(batches[at:at + 2]))
        append = cpu() - start
        chunks = [stored[at:at + index_every] for at in range(0, len(stored), index_every)]
        start = cpu()
        for chunk in chunks:
            store.index_batches(chunk)
        index = cpu() - start
        start = cpu()
        store.mark_released([group.trace_id for _, groups in stored for group in groups])
        release = cpu() - start
        db = store.db
        db.executescript(_PER_BATCH)
        start = cpu()
        for chunk in chunks:
            db.execute("BEGIN IMMEDIATE")
            db.executemany("INSERT INTO batch_groups VALUES (?, ?, ?)", [
                (batch_id, "".join(group.trace_id for group in groups).encode(),
                 orjson.dumps([(group.span_ids.hex(), group.start_ns, group.root,
                                group.annotations) for group in groups]))
                for batch_id, groups in chunk])
            db.execute("INSERT INTO releases (trace_ids) VALUES (?)", (
                "".join(group.trace_id for _, groups in chunk for group in groups).encode(),))
            db.execute("COMMIT")
        per_batch = cpu() - start
        store.close()
    return {"append": append / spans, "index": index / spans, "release": release / spans,
            "per_batch": per_batch / spans}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=24_000,
                        help="agent requests (5 spans each)")
    parser.add_argument("--batch", type=int, default=512, help="spans per OTLP request")
    parser.add_argument("--index-every", type=int, default=32, help="requests per index commit")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    spans = make_spans(args.requests)
    bodies = [encode_spans(spans[at:at + args.batch]).SerializeToString()
              for at in range(0, len(spans), args.batch)]
    shaper = Shaper()
    batches = [shaper.shape_and_decode(parse_request(body), body) for body in bodies]
    groups = sum(len(batch.traces) for batch in batches)
    runs = [one_run(batches, args.index_every) for _ in range(args.repeat)]
    figure = {part: statistics.median(run[part] for run in runs) * 1e6 for part in runs[0]}
    print(f"{len(spans):,} spans in {len(bodies)} requests ({groups:,} trace groups); "
          f"index commits of {args.index_every} requests; µs of CPU per span, "
          f"median of {args.repeat}")
    print(f"  acknowledging commits (bodies)               {figure['append']:6.2f}")
    print(f"  index: rows per trace and batch + upserts   {figure['index']:6.2f}")
    print(f"  release marks: one update per trace          {figure['release']:6.2f}")
    today = figure["index"] + figure["release"]
    print(f"  index + release today                        {today:6.2f}")
    print(f"  one row per batch + a release blob per commit {figure['per_batch']:5.2f}"
          f"   ({today / figure['per_batch']:.1f}x less)")


if __name__ == "__main__":
    main()
