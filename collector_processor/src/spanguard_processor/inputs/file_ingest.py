"""Span files into a store the way ``serve`` takes requests: redacted, or sent through a
live ``serve``'s receiver.

* :func:`redacted` — one decoded batch with the
  :class:`~spanguard_processor.collector.redaction.Redactor` applied to every string
  (:mod:`~spanguard_processor.ingest.redact_otlp`), decoded again from the redacted
  message, so the file's original text is never stored;
* :func:`ingest_redacted` — ``ingest_files`` with that applied to each batch;
* :func:`send_files` — each batch POSTed to a running ``spanguard serve``'s OTLP/HTTP
  receiver (the store's one writer), retrying while it answers 429 or 503.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from spanguard.exceptions import InputError

from ..collector.redaction import Redactor
from ..ingest.codec import Media
from ..ingest.otlp_json import decode_document
from ..ingest.otlp_proto import decode_request, parse_request
from ..ingest.redact_otlp import redact_document, redact_request
from ..ingest.spans import FORMAT_PROTOBUF, DecodedBatch, gc_paused
from ..store.span_store import SpanStore
from .readers import IngestReport, iter_span_file

__all__ = ["SendReport", "ingest_redacted", "redacted", "send_files"]

Progress = Callable[[Path, int], None]
_CHUNK_SPANS = 5000
_RETRIES = 30


def redacted(batch: DecodedBatch, redactor: Redactor) -> DecodedBatch:
    """``batch`` with every string redacted (itself when nothing changed)."""
    if batch.fmt == FORMAT_PROTOBUF:
        request = parse_request(batch.body)
        return decode_request(request) if redact_request(redactor, request) else batch
    document = orjson.loads(batch.body)
    return decode_document(document) if redact_document(redactor, document) else batch


def _batches(
    paths: Sequence[Path], skip_bad: bool, report: IngestReport, progress: Progress | None
) -> Iterator[DecodedBatch]:
    for path in paths:
        tick = (lambda pos, p=path: progress(p, pos)) if progress else None
        yield from iter_span_file(path, skip_bad=skip_bad, report=report, progress=tick)


def ingest_redacted(
    store: SpanStore,
    paths: Sequence[Path],
    redactor: Redactor,
    *,
    skip_bad: bool = False,
    progress: Progress | None = None,
) -> IngestReport:
    """Store the spans of span files, redacted, then mark every trace released."""
    report = IngestReport()
    pending: list[DecodedBatch] = []
    count = 0
    with gc_paused():
        for batch in _batches(paths, skip_bad, report, progress):
            pending.append(redacted(batch, redactor))
            count += len(batch.spans)
            if count >= _CHUNK_SPANS:
                store.put_batches(pending)
                pending, count = [], 0
        store.put_batches(pending)
    store.release_all()
    return report


@dataclass(frozen=True, slots=True)
class SendReport:
    """What :func:`send_files` sent: spans and requests, the lines skipped, the spans the
    receiver rejected (through OTLP partial success)."""

    spans: int
    requests: int
    skipped: tuple[tuple[str, int], ...]


def send_files(
    url: str,
    paths: Sequence[Path],
    *,
    token: bytes | None = None,
    skip_bad: bool = False,
    progress: Progress | None = None,
) -> SendReport:
    """POST the span batches of ``paths`` to ``url`` (a ``spanguard serve``'s OTLP/HTTP base
    address, e.g. ``http://127.0.0.1:4318``); :class:`InputError` if it refuses one."""
    report = IngestReport()
    endpoint = url.rstrip("/") + "/v1/traces"
    requests = 0
    for batch in _batches(paths, skip_bad, report, progress):
        media = Media.PROTOBUF if batch.fmt == FORMAT_PROTOBUF else Media.JSON
        _post(endpoint, batch.body, media, token)
        requests += 1
    return SendReport(report.spans, requests, tuple(report.skipped))


def _post(endpoint: str, body: bytes, media: str, token: bytes | None) -> None:
    headers = {"content-type": media}
    if token is not None:
        headers["authorization"] = f"Bearer {token.decode()}"
    for attempt in range(_RETRIES):
        request = urllib.request.Request(endpoint, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=60) as reply:
                reply.read()
                return
        except urllib.error.HTTPError as exc:
            if exc.code in (429, 503) and attempt + 1 < _RETRIES:
                time.sleep(float(exc.headers.get("retry-after") or 1))
                continue
            detail = exc.read().decode("utf-8", "replace")[:300]
            raise InputError(f"{endpoint} answered {exc.code}: {detail}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise InputError(
                f"cannot send to {endpoint} ({reason}); is spanguard serve running there?"
            ) from None
