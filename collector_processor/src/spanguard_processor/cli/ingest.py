"""``spanguard ingest``: span files into a span store (streamed), optionally exported."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..collector.store import SpanStore
from ..common.writes import will_create
from ..inputs import guard
from ..inputs.readers import IngestReport, ingest_files
from ._common import check_files

__all__ = ["ingest"]


@click.command()
@click.argument("files", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--store", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("spanguard.db"), show_default=True,
              help="SQLite span store to add the spans to (created if missing).")
@click.option("--skip-bad", is_flag=True,
              help="Skip malformed lines (counted and reported) instead of stopping at the first.")
def ingest(files: tuple[Path, ...], store: Path, skip_bad: bool) -> None:
    """Read span FILES into a span store and assemble their traces.

    FILES may be the Collector file exporter's output (JSON lines or length-prefixed
    protobuf), the Python OTLP JSON file exporter's output, or whole OTLP-JSON documents;
    any of them gzip-compressed. Spans already in the store are not duplicated.

    \b
    Example:
      spanguard ingest spans.jsonl.gz --store spans.db
      spanguard traces export --store spans.db --format agent -o traces.jsonl
    """
    check_files([(guard.SPANS, files)], [store])
    # a store this run creates is removed if the run fails (with its WAL and shared memory)
    will_create(store, *(store.with_name(store.name + end) for end in ("-wal", "-shm")))
    total = sum(path.stat().st_size for path in files)
    done = {path: 0 for path in files}
    with SpanStore(store) as target:
        if sys.stdout.isatty():
            with click.progressbar(length=total, label="ingesting", file=sys.stderr) as bar:
                def tick(path: Path, position: int) -> None:
                    bar.update(position - done[path])
                    done[path] = position

                report = ingest_files(target, files, skip_bad=skip_bad, progress=tick)
        else:
            report = ingest_files(target, files, skip_bad=skip_bad)
        released, _pending = target.trace_counts()
    _summary(report, store, released)


def _summary(report: IngestReport, store: Path, traces: int) -> None:
    click.echo(f"ingested {report.spans} span(s) in {report.batches} batch(es) into {store}; "
               f"the store holds {traces} trace(s)")
    if report.skipped:
        first = ", ".join(f"{f}:{n}" for f, n in report.skipped[:5])
        more = " …" if len(report.skipped) > 5 else ""
        click.echo(f"skipped {len(report.skipped)} bad line(s): {first}{more}", err=True)
