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

The pipeline after the body has arrived is the one both receivers share
(``collector/receive.Receiver``); this module adds what is HTTP's own: content types and
encodings, the body's size and arrival time, gzip, the statuses and ``Retry-After``.
Decompression and decoding of bodies over 256 KiB run on a small pool of worker threads, off the
event loop, so ``/health`` and admission answer while large requests are decoded (a smaller body
decodes in a millisecond or two, cheaper than the hop to a thread and back).
"""

from __future__ import annotations

import asyncio
import zlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson
from google.rpc.status_pb2 import Status
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..ingest.otlp_proto import MIN_SPAN_BYTES
from ..ingest.spans import DecodedBatch
from .admission import Reservation
from .limits import DEFAULT_MAX_BODY
from .os_threads import name_os_thread
from .receive import JSON, PROTOBUF, Received, Receiver, Refusal, Refused, export_response
from .security import BearerAuth

__all__ = ["create_app"]

BODY_TIMEOUT = 30.0  # seconds for a request body to arrive (the headers: connections.py)
INLINE_DECODE_MAX = 256 * 1024  # larger bodies (and every gzip body) decode on a worker thread

_STATUS = {Refusal.MALFORMED: 400, Refusal.TOO_LARGE: 413, Refusal.OVERLOADED: 429,
           Refusal.REDACTION_FAILED: 500, Refusal.UNAVAILABLE: 503}


class _Reject(Exception):
    """A refusal of HTTP's own (415, 408)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _too_large(message: str) -> Refused:
    return Refused(Refusal.TOO_LARGE, message)


async def _read_body(request: Request, limit: int, timeout: float = BODY_TIMEOUT) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(f"the request body is {declared} bytes; the limit is {limit}.")
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise _too_large(f"the request body exceeds the limit of {limit} bytes.")
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
            raise Refused(Refusal.MALFORMED, f"the gzip body is corrupt ({exc}).") from None
        size += len(data)
        if size > limit or inflater.unconsumed_tail:
            raise _too_large(f"the decompressed body exceeds the limit of {limit} bytes.")
        if not inflater.eof:
            raise Refused(Refusal.MALFORMED, "the gzip body is truncated.")
        parts.append(data)
        rest = inflater.unused_data
        if not rest:
            return b"".join(parts)
        if not rest.startswith(b"\x1f\x8b"):
            raise Refused(Refusal.MALFORMED,
                          f"{len(rest)} byte(s) after the gzip data are not a gzip member.")


def _size_hint(body: bytes, gzipped: bool, limit: int) -> int:
    """The body's decoded size as far as it can be told without decoding: a gzip member's
    trailer records its uncompressed size (an exporter's claim, checked after inflating)."""
    if not gzipped or len(body) < 4:
        return len(body)
    return max(len(body), min(int.from_bytes(body[-4:], "little"), limit))


def _media(request: Request) -> str:
    """The request's content type; 415 for one that is not OTLP."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media not in (PROTOBUF, JSON):
        raise _Reject(415, f"content type {media or '(none)'!r} is not supported; "
                           f"send {PROTOBUF} or {JSON}.")
    return media


def _gzipped(request: Request) -> bool:
    """Whether the body is gzipped; 415 for an encoding other than gzip or identity."""
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("gzip", "identity", ""):
        raise _Reject(415, f"content encoding {encoding!r} is not supported; "
                           "send gzip or identity.")
    return encoding == "gzip"


def _response(media: str, batch: DecodedBatch) -> Response:
    if media == PROTOBUF:
        return Response(export_response(batch).SerializeToString(), media_type=PROTOBUF)
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
        return Response(Status(code=_RPC_CODES.get(status, 14),
                               message=message).SerializeToString(),
                        status_code=status, media_type=PROTOBUF, headers=headers)
    return JSONResponse({"code": status, "message": message}, status_code=status,
                        headers=headers)


class _Export:
    """``POST /v1/traces``: HTTP's checks, then the shared :class:`Receiver`."""

    def __init__(self, receiver: Receiver, max_body_bytes: int, body_timeout: float,
                 decoders: int) -> None:
        self.receiver = receiver
        self.max_body_bytes = max_body_bytes
        self.body_timeout = body_timeout
        self.decoder = ThreadPoolExecutor(max_workers=decoders,
                                          thread_name_prefix="spanguard-decode",
                                          initializer=name_os_thread)

    async def export(self, request: Request) -> Response:
        try:
            media = _media(request)
        except _Reject as reject:  # answered in JSON
            return self._error(reject.status, reject.message, JSON)
        try:
            batch = await self._export(request, media)
        except _Reject as reject:
            return self._error(reject.status, reject.message, media)
        except Refused as refused:
            return self._error(_STATUS[refused.kind], refused.message, media)
        return _response(media, batch)

    def _error(self, status: int, message: str, media: str) -> Response:
        return _error(status, message, media, self.receiver.limits.retry_after)

    async def _export(self, request: Request, media: str) -> DecodedBatch:
        receiver, limit = self.receiver, self.max_body_bytes
        gzipped = _gzipped(request)
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and not receiver.admission.fits(
                -(-min(int(declared), limit) // MIN_SPAN_BYTES)):
            raise receiver.overloaded()  # busy: refuse before reading (nothing held meanwhile)
        body = await _read_body(request, limit, self.body_timeout)
        reservation = receiver.admit(_size_hint(body, gzipped, limit))  # before any work
        try:
            if gzipped or len(body) > INLINE_DECODE_MAX:
                received = await asyncio.get_running_loop().run_in_executor(
                    self.decoder, self._receive, body, media, gzipped, reservation)
            else:  # a millisecond or two: cheaper than a hop to a worker thread and back
                received = self._receive(body, media, gzipped, reservation)
        finally:  # e.g. the client hung up while its body was decoded
            receiver.release_unless_stored(reservation)
        await receiver.wait_async(received)
        return received.batch

    def _receive(self, body: bytes, media: str, gzipped: bool, reservation: Reservation
                 ) -> Received:
        if gzipped:
            body = _gunzip(body, self.max_body_bytes)
        return self.receiver.receive(body, media, reservation)


def create_app(receiver: Receiver, *, max_body_bytes: int = DEFAULT_MAX_BODY,
               token: bytes | None = None, decoders: int = 2,
               body_timeout: float = BODY_TIMEOUT) -> Starlette:
    """The OTLP/HTTP application, writing through ``receiver``; ``token`` requires bearer auth.

    ``decoders`` worker threads decode request bodies (``app.state.decoder``; shut it down
    after the server stopped).
    """
    endpoint = _Export(receiver, max_body_bytes, body_timeout, decoders)
    ingestor = receiver.ingestor

    async def health(request: Request) -> Response:
        stats = ingestor.stats()
        return JSONResponse(
            {
                "status": "ok" if ingestor.healthy else "unavailable",
                "spans_received": stats.spans_received,
                "spans_duplicated": stats.spans_duplicated,
                "traces_in_flight": stats.traces_in_flight,
                "traces_released": stats.traces_released,
            },
            status_code=200 if ingestor.healthy else 503,
        )

    app = Starlette(
        routes=[
            Route("/v1/traces", endpoint.export, methods=["POST"]),
            Route("/health", health, methods=["GET"]),
        ],
        middleware=[Middleware(BearerAuth, token=token)] if token else None,
    )
    app.state.decoder = endpoint.decoder
    return app
