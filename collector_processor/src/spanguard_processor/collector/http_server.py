"""OTLP/HTTP receiver: ``POST /v1/traces`` (protobuf or JSON, optionally gzip) and ``GET /health``.

Built on starlette (served by uvicorn). Every failure is answered with the right status and a
message, and never stores anything half-way:

* 415 — a content type other than ``application/x-protobuf`` / ``application/json``, or a content
  encoding other than ``gzip`` / ``identity``;
* 413 — a body over ``max_body_bytes``, before or after decompression (a gzip bomb stops at the
  limit, it is never inflated whole);
* 400 — garbage protobuf, invalid JSON or UTF-8, a malformed OTLP document, corrupt or
  truncated gzip or bytes after its last member, or a request whose spans all lack valid ids;
* 401 — a bearer token is configured and the request does not carry it;
* 413 — also a request carrying more spans than ``--max-pending-spans`` (it could never fit);
* 429 — too many spans are being decoded or waiting for the store (back-pressure), with
  ``Retry-After``: decided from the body's size before anything is decoded, then from the exact
  span count read off the wire format, so a refusal never waits for a large request's decoding;
* 500 — the operator's redaction hook failed (nothing is stored unredacted);
* 503 — the processor is shutting down, its store failed (e.g. the disk is full) or is slower
  than the acknowledgement timeout, with ``Retry-After`` (the exporter retries).

A request where only some spans lack valid ids gets 200 with an OTLP partial-success body
(``rejected_spans`` and ``error_message``); the valid spans are stored.

Decompression and decoding of bodies over 256 KiB run on a small pool of worker threads, off the
event loop, so ``/health`` and admission answer while large requests are decoded (a smaller body
decodes in a millisecond or two, cheaper than the hop to a thread and back).
"""

from __future__ import annotations

import asyncio
import importlib
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import orjson
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceResponse,
)
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from spanguard.exceptions import TraceFormatError

from ..ingest.otlp_json import decode_document, estimate_spans
from ..ingest.otlp_proto import MIN_SPAN_BYTES, count_spans, parse_request
from ..ingest.spans import DecodedBatch, gc_paused
from .ingestor import Ingestor
from .limits import DEFAULT_MAX_BODY, Guard, Overloaded, Reservation, TooLarge
from .redaction import RedactionFailed
from .security import BearerAuth

__all__ = ["create_app"]

BODY_TIMEOUT = 30.0  # seconds for a request body to arrive (the headers: connections.py)
INLINE_DECODE_MAX = 256 * 1024  # larger bodies (and every gzip body) decode on a worker thread
PROTOBUF = "application/x-protobuf"
JSON = "application/json"


class _Reject(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


async def _read_body(request: Request, limit: int, timeout: float = BODY_TIMEOUT) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _Reject(413, f"the request body is {declared} bytes; the limit is {limit}.")
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise _Reject(413, f"the request body exceeds the limit of {limit} bytes.")
                chunks.append(chunk)
    except TimeoutError:
        raise _Reject(408, f"the request body did not arrive within {timeout:g} s."
                      ) from None
    return b"".join(chunks)


def _gunzip(body: bytes, limit: int) -> bytes:
    """Every member of a gzip body, decompressed (RFC 1952 allows several, one after another),
    never inflating more than ``limit`` bytes in all; bytes after the last member are refused."""
    parts: list[bytes] = []
    size = 0
    rest = body
    while True:
        inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        try:
            data = inflater.decompress(rest, limit - size + 1)
        except zlib.error as exc:
            raise _Reject(400, f"the gzip body is corrupt ({exc}).") from None
        size += len(data)
        if size > limit or inflater.unconsumed_tail:
            raise _Reject(413, f"the decompressed body exceeds the limit of {limit} bytes.")
        if not inflater.eof:
            raise _Reject(400, "the gzip body is truncated.")
        parts.append(data)
        rest = inflater.unused_data
        if not rest:
            return b"".join(parts)
        if not rest.startswith(b"\x1f\x8b"):
            raise _Reject(400, f"{len(rest)} byte(s) after the gzip data are not a gzip member.")


def _size_hint(body: bytes, gzipped: bool, limit: int) -> int:
    """The body's decoded size as far as it can be told without decoding: a gzip member's
    trailer records its uncompressed size (an exporter's claim, checked after inflating)."""
    if not gzipped or len(body) < 4:
        return len(body)
    return max(len(body), min(int.from_bytes(body[-4:], "little"), limit))


def _prepare(body: bytes, media: str, gzipped: bool, guard: Guard, reservation: Reservation,
             limit: int) -> DecodedBatch:
    """On a worker thread: inflate, count the spans exactly (refusing what does not fit before
    decoding), decode, then hold only the spans kept."""
    if gzipped:
        body = _gunzip(body, limit)
    try:
        if media == PROTOBUF:
            guard.resize(reservation, count_spans(body, guard.limits.max_pending_spans))
        else:
            guard.resize(reservation, estimate_spans(body))
        batch = _decode(body, media, guard)
        guard.resize(reservation, len(batch.spans))  # only the valid spans are kept
    except TraceFormatError as exc:
        raise _Reject(400, f"the body {exc}") from None
    except TooLarge as exc:
        raise _Reject(413, str(exc)) from None
    except Overloaded as exc:
        raise _Reject(429, f"the processor is overloaded: {exc}") from None
    return batch


def _decode(body: bytes, media: str, guard: Guard) -> DecodedBatch:
    try:
        if media == PROTOBUF:
            with gc_paused():
                return guard.shape_and_decode(parse_request(body), body)
        with gc_paused():
            try:
                document = orjson.loads(body)
            except orjson.JSONDecodeError as exc:
                raise _Reject(400, f"the body is not valid JSON (or not UTF-8): {exc}.") from None
            rejected, error, changed = guard.shape_json(document)
            batch = decode_document(document, None if changed else body)
        return _with_rejected(batch, rejected, error)
    except TraceFormatError as exc:
        raise _Reject(400, f"the body {exc}" if not exc.field else str(exc)) from None
    except RedactionFailed as exc:
        raise _Reject(500, f"{exc}; the spans were not stored.") from None


def _with_rejected(batch: DecodedBatch, rejected: int, error: str | None) -> DecodedBatch:
    if not rejected:
        return batch
    return replace(batch, rejected=batch.rejected + rejected, error=batch.error or error)


def _response(media: str, batch: DecodedBatch) -> Response:
    if media == PROTOBUF:
        reply: Any = ExportTraceServiceResponse()
        if batch.rejected:
            reply.partial_success.rejected_spans = batch.rejected
            reply.partial_success.error_message = batch.error or ""
        return Response(reply.SerializeToString(), media_type=PROTOBUF)
    body: dict[str, Any] = {}
    if batch.rejected:
        body["partialSuccess"] = {
            "rejectedSpans": str(batch.rejected), "errorMessage": batch.error or ""}
    return Response(orjson.dumps(body), media_type=JSON)


_RPC_CODES = {400: 3, 408: 4, 413: 8, 429: 8}  # INVALID_ARGUMENT, DEADLINE_EXCEEDED,
#                                             RESOURCE_EXHAUSTED; else UNAVAILABLE


def _error(status: int, message: str, media: str, retry_after: int) -> Response:
    # OTLP/HTTP answers errors with a google.rpc.Status; its message is what exporters log.
    # 429 and 503 are the statuses OTLP exporters retry; Retry-After says when.
    headers = {"Retry-After": str(retry_after)} if status in (429, 503) else None
    if media == PROTOBUF:
        status_pb2 = importlib.import_module("google.rpc.status_pb2")

        return Response(status_pb2.Status(code=_RPC_CODES.get(status, 14),
                                          message=message).SerializeToString(),
                        status_code=status, media_type=PROTOBUF, headers=headers)
    return JSONResponse({"code": status, "message": message}, status_code=status,
                        headers=headers)


def create_app(ingestor: Ingestor, *, max_body_bytes: int = DEFAULT_MAX_BODY,
               guard: Guard | None = None, token: bytes | None = None,
               decoders: int = 2, body_timeout: float = BODY_TIMEOUT) -> Starlette:
    """The OTLP/HTTP application, writing through ``ingestor``; ``token`` requires bearer auth.

    ``decoders`` worker threads decode request bodies (``app.state.decoder``; shut it down
    after the server stopped).
    """
    guard = guard if guard is not None else Guard()
    retry_after = guard.limits.retry_after
    decoder = ThreadPoolExecutor(max_workers=decoders, thread_name_prefix="spanguard-decode")

    async def export(request: Request) -> Response:
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        reply_media = media if media in (PROTOBUF, JSON) else JSON
        reservation: Reservation | None = None
        try:
            if media not in (PROTOBUF, JSON):
                raise _Reject(415, f"content type {media or '(none)'!r} is not supported; "
                                   f"send {PROTOBUF} or {JSON}.")
            encoding = request.headers.get("content-encoding", "identity").strip().lower()
            if encoding not in ("gzip", "identity", ""):
                raise _Reject(415, f"content encoding {encoding!r} is not supported; "
                                   "send gzip or identity.")
            gzipped = encoding == "gzip"
            declared = request.headers.get("content-length", "")
            if declared.isdigit() and not guard.fits(
                    -(-min(int(declared), max_body_bytes) // MIN_SPAN_BYTES)):
                # busy: refuse before reading the body (nothing is held while it uploads)
                raise _Reject(429, f"the processor is overloaded: {guard.busy()}")
            body = await _read_body(request, max_body_bytes, body_timeout)
            if not ingestor.healthy:
                raise _Reject(503, "the processor is shutting down; retry later.")
            try:  # admission before any work: an estimate from the size
                reservation = guard.admit(
                    -(-_size_hint(body, gzipped, max_body_bytes) // MIN_SPAN_BYTES))
            except Overloaded as exc:
                raise _Reject(429, f"the processor is overloaded: {exc}") from None
            held = reservation
            if gzipped or len(body) > INLINE_DECODE_MAX:
                batch = await asyncio.get_running_loop().run_in_executor(
                    decoder, lambda: _prepare(body, media, gzipped, guard, held, max_body_bytes))
            else:  # a millisecond or two: cheaper than a hop to a worker thread and back
                batch = _prepare(body, media, gzipped, guard, held, max_body_bytes)
            if batch.rejected and not batch.spans:
                raise _Reject(400, f"every span was rejected: {batch.error}")
            try:
                future = guard.submit(lambda: ingestor.submit(batch), reservation)
                # shield: a timeout or a client hanging up must not cancel the writer's future
                await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(future)),
                                       guard.limits.ack_timeout)
            except TimeoutError:
                raise _Reject(503, "the store is slow; retry later.") from None
            except Exception as exc:  # store failure or shutdown: retryable
                raise _Reject(503, f"the spans could not be stored ({exc}); retry later.") from exc
        except _Reject as reject:
            return _error(reject.status, reject.message, reply_media, retry_after)
        finally:
            if reservation is not None and not reservation.owned:
                guard.release(reservation)
        return _response(media, batch)

    async def health(request: Request) -> Response:
        stats = ingestor.stats()
        status = "ok" if ingestor.healthy else "unavailable"
        return JSONResponse(
            {
                "status": status,
                "spans_received": stats.spans_received,
                "spans_duplicated": stats.spans_duplicated,
                "traces_in_flight": stats.traces_in_flight,
                "traces_released": stats.traces_released,
            },
            status_code=200 if ingestor.healthy else 503,
        )

    app = Starlette(
        routes=[
            Route("/v1/traces", export, methods=["POST"]),
            Route("/health", health, methods=["GET"]),
        ],
        middleware=[Middleware(BearerAuth, token=token)] if token else None,
    )
    app.state.decoder = decoder
    return app
