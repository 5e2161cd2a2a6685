"""CPU per span of the span writer's store work, in process, beside the version-2 layout.

The same agent requests ``bench/bench_ingest.py`` sends (512 spans each, 5 per trace) are
decoded once as the receiver does, then stored as ``spanguard serve``'s writer stores them:

* acknowledging commits (:meth:`SpanStore.append_batches`, two requests per commit, as 4
  clients arrive together): the floor, the bodies every layout stores;
* index commits of 32 requests (:meth:`SpanStore.index_batches`: store version 3, one
  ``batch_traces`` row per batch);
* release marks (:meth:`SpanStore.mark_released`: one ``releases`` row per commit);

beside the same index commits and release marks in the layout of store version 2 (per trace
and batch one ``trace_batches`` row, a ``traces`` upsert and a probe for earlier spans of that
trace; one ``traces`` update per released trace), on a scratch database with the store's
pragmas, in the same run. Then what version 3 moves to readers: building their per-trace
tables on the first read (:class:`~spanguard_processor.store.view.TraceView`), per
span. CPU seconds of this process, per span; medians of --repeat runs.

    .venv/bin/python bench/bench_writer.py        # ~40 s
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_ingest import make_spans  # noqa: E402
from spanguard_processor.collector.limits import Shaper  # noqa: E402
from spanguard_processor.ingest.codec_protobuf import PROTOBUF_CODEC  # noqa: E402
from spanguard_processor.ingest.spans import DecodedBatch  # noqa: E402
from spanguard_processor.store.index import index_groups  # noqa: E402
from spanguard_processor.store.schema import PAGE_SIZE, VIEW_SCHEMA  # noqa: E402
from spanguard_processor.store.span_store import SpanStore  # noqa: E402


def version2(path: Path) -> sqlite3.Connection:
    """A scratch database with store version 2's per-trace tables and the store's pragmas."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute(f"PRAGMA page_size = {PAGE_SIZE}")
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE batches (id INTEGER PRIMARY KEY, fmt TEXT, body BLOB, crc INTEGER)")
    db.executescript(VIEW_SCHEMA.replace("TEMP ", "").replace("temp.", ""))
    return db


def one_run(batches: list[DecodedBatch], index_every: int) -> dict[str, float]:
    """CPU seconds per span of each part of the writer's store work, on a new store."""
    spans = sum(batch.count for batch in batches)
    cpu = time.process_time
    with tempfile.TemporaryDirectory() as folder:
        store = SpanStore(Path(folder) / "bench.db")
        stored = []
        start = cpu()
        for at in range(0, len(batches), 2):
            stored.extend(store.append_batches(batches[at : at + 2]))
        append = cpu() - start
        chunks = [stored[at : at + index_every] for at in range(0, len(stored), index_every)]
        traces = [[group.trace_id for _, groups in chunk for group in groups] for chunk in chunks]
        start = cpu()
        for chunk in chunks:
            store.index_batches(chunk)
        index = cpu() - start
        start = cpu()
        for released in traces:
            store.mark_released(released)
        release = cpu() - start
        store.close()
        start = cpu()
        with SpanStore(Path(folder) / "bench.db", readonly=True) as reader:
            assert reader.span_count() == spans
        view = cpu() - start

        old = version2(Path(folder) / "v2.db")
        start = cpu()
        for chunk in chunks:
            old.execute("BEGIN IMMEDIATE")
            index_groups(old, chunk)
            old.execute("COMMIT")
        old_index = cpu() - start
        start = cpu()
        for released in traces:
            old.execute("BEGIN IMMEDIATE")
            old.executemany(
                "UPDATE traces SET released = 1 WHERE trace_id = ?", [(t,) for t in released]
            )
            old.execute("COMMIT")
        old_release = cpu() - start
        old.close()
    return {
        "append": append / spans,
        "index": index / spans,
        "release": release / spans,
        "view": view / spans,
        "old_index": old_index / spans,
        "old_release": old_release / spans,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--requests", type=int, default=24_000, help="agent requests (5 spans each)"
    )
    parser.add_argument("--batch", type=int, default=512, help="spans per OTLP request")
    parser.add_argument("--index-every", type=int, default=32, help="requests per index commit")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    spans = make_spans(args.requests)
    bodies = [
        encode_spans(spans[at : at + args.batch]).SerializeToString()
        for at in range(0, len(spans), args.batch)
    ]
    shaper = Shaper()
    batches = [PROTOBUF_CODEC.decode(body, None, shaper.shaping) for body in bodies]
    groups = sum(len(batch.traces) for batch in batches)
    runs = [one_run(batches, args.index_every) for _ in range(args.repeat)]
    figure = {part: statistics.median(run[part] for run in runs) * 1e6 for part in runs[0]}
    print(
        f"{len(spans):,} spans in {len(bodies)} requests ({groups:,} trace groups); "
        f"index commits of {args.index_every} requests; µs of CPU per span, "
        f"median of {args.repeat}"
    )
    print(f"  acknowledging commits (bodies; the floor)         {figure['append']:6.2f}")
    now = figure["index"] + figure["release"]
    before = figure["old_index"] + figure["old_release"]
    print(
        f"  index + release, version 3 (a row per batch)      {now:6.2f}"
        f"   ({now / figure['append']:.2f}x the floor)"
    )
    print(
        f"  index + release, version 2 (rows per trace)       {before:6.2f}"
        f"   ({before / figure['append']:.2f}x the floor; {before / now:.1f}x version 3)"
    )
    print(f"  a reader's first read: per-trace tables built     {figure['view']:6.2f}")


if __name__ == "__main__":
    main()
