"""``spanguard ingest``: span files into a span store (streamed), redacted if asked, or sent
through a live ``spanguard serve`` (the store's one writer)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from spanguard.exceptions import ConfigError

from ..collector.redaction import Redactor, load_hook
from ..collector.security import TOKEN_ENV, read_token
from ..common.writes import will_create
from ..inputs import guard
from ..inputs.file_ingest import ingest_redacted, send_files
from ..inputs.readers import IngestReport, ingest_files
from ..store.lock import StoreLocked, lock_path
from ..store.span_store import SpanStore
from ._common import check_files, stored_redact_option

__all__ = ["ingest"]

Tick = Callable[[Path, int], None]


@click.command()
@click.argument(
    "files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@click.option(
    "--store",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("spanguard.db"),
    show_default=True,
    help="SQLite span store to add the spans to (created if missing). A store a "
    "live spanguard serve writes is refused (exit 2): use --via.",
)
@click.option(
    "--via",
    metavar="URL",
    help="Send the spans to a running spanguard serve's OTLP/HTTP address (e.g. "
    "http://127.0.0.1:4318) instead of writing a store; it redacts and "
    "stores them as it does any request.",
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help=f"With --via: file holding the serve's bearer token (or set {TOKEN_ENV}).",
)
@click.option(
    "--skip-bad",
    is_flag=True,
    help="Skip malformed lines (counted and reported) instead of stopping at the first.",
)
@stored_redact_option
@click.option(
    "--redact-hook",
    metavar="MODULE:FUNCTION",
    help="Call FUNCTION(key, text) -> text | None on every string of every span "
    "before it is stored (None drops it), as spanguard serve does.",
)
def ingest(
    files: tuple[Path, ...],
    store: Path,
    via: str | None,
    token_file: Path | None,
    skip_bad: bool,
    redact: bool,
    redact_hook: str | None,
) -> None:
    """Read span FILES into a span store and assemble their traces.

    FILES may be the Collector file exporter's output (JSON lines or length-prefixed
    protobuf), the Python OTLP JSON file exporter's output, or whole OTLP-JSON documents;
    any of them gzip-compressed. Spans already in the store are not duplicated.

    \b
    Example:
      spanguard ingest spans.jsonl.gz --store spans.db
      spanguard ingest spans.jsonl.gz --via http://127.0.0.1:4318
      spanguard traces export --store spans.db -f agent -o traces.jsonl
    """
    check_files([(guard.SPANS, files)], [store] if via is None else [])
    if via is not None:
        if redact or redact_hook:
            raise ConfigError(
                "via",
                "the serve receiving the spans redacts them with its own "
                "settings; leave out `redact`/`redact_hook`.",
            )
        with _progress(files) as tick:
            sent = send_files(
                via, files, token=read_token(token_file), skip_bad=skip_bad, progress=tick
            )
        click.echo(f"sent {sent.spans} span(s) in {sent.requests} request(s) to {via}")
        _skipped(list(sent.skipped))
        return
    redactor = Redactor(redact, load_hook(redact_hook) if redact_hook else None)
    # a store this run creates is removed if the run fails (with its WAL, shared memory and
    # the writer lock file beside it)
    will_create(
        store, *(store.with_name(store.name + end) for end in ("-wal", "-shm")), lock_path(store)
    )
    with _writable(store) as target:
        target.lock.describe("spanguard ingest")
        with _progress(files) as tick:
            report = (
                ingest_redacted(target, files, redactor, skip_bad=skip_bad, progress=tick)
                if redactor.active
                else ingest_files(target, files, skip_bad=skip_bad, progress=tick)
            )
        released, _pending = target.trace_counts()
    _summary(report, store, released)


@contextmanager
def _writable(store: Path) -> Iterator[SpanStore]:
    """The store opened for writing; one a live serve writes is refused, pointing at --via."""
    try:
        target = SpanStore(store)
    except StoreLocked as exc:
        url = exc.holder.get("http")
        hint = f" (spanguard ingest --via {url})" if url else ""
        raise ConfigError("--store", f"{exc}{hint}") from None
    with target:
        yield target


@contextmanager
def _progress(files: tuple[Path, ...]) -> Iterator[Tick | None]:
    """A progress bar on a terminal (None otherwise) ticked with each file's position."""
    if not sys.stdout.isatty():
        yield None
        return
    done = {path: 0 for path in files}
    total = sum(path.stat().st_size for path in files)
    with click.progressbar(length=total, label="ingesting", file=sys.stderr) as bar:

        def tick(path: Path, position: int) -> None:
            bar.update(position - done[path])
            done[path] = position

        yield tick


def _summary(report: IngestReport, store: Path, traces: int) -> None:
    click.echo(
        f"ingested {report.spans} span(s) in {report.batches} batch(es) into {store}; "
        f"the store holds {traces} trace(s)"
    )
    _skipped(report.skipped)


def _skipped(skipped: list[tuple[str, int]]) -> None:
    if skipped:
        first = ", ".join(f"{f}:{n}" for f, n in skipped[:5])
        more = " …" if len(skipped) > 5 else ""
        click.echo(f"skipped {len(skipped)} bad line(s): {first}{more}", err=True)
