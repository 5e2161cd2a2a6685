"""OTLP/HTTP receiver: ``POST /v1/traces`` (protobuf or JSON, optionally gzip) and ``GET /health``.

Built on starlette (served by uvicorn). Every failure is answered with the right status and a
message, and never stores anything half-way:

* 415 — a content type other than ``application/x-protobuf`` / ``application/json``, or a content
  encoding other than ``gzip`` / ``identity``;
* 413 — a body over ``max_body_bytes``, before or after decompression (a gzip bomb stops at the
  limit, it is never inflated whole);
* 400 — garbage protobuf, invalid JSON or UTF-8, a malformed OTLP document, or a request whose
  spans all lack valid ids;
* 503 — the processor is shutting down or its store failed (the exporter retries).

A request where only some spans lack valid ids gets 200 with an OTLP partial-success body
(``rejected_spans`` and ``error_message``); the valid spans are stored.
"""

from __future__ import annotations

import asyncio
import importlib
import zlib
from typing import Any

import orjson
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceResponse,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from spanguard.exceptions import TraceFormatError

from .ingest.otlp_json import decode_document
from .ingest.otlp_proto import decode_request, parse_request
from .ingestor import Ingestor
from .spans import DecodedBatch

__all__ = ["DEFAULT_MAX_BODY", "create_app"]

DEFAULT_MAX_BODY = 16 * 1024 * 1024
PROTOBUF = "application/x-protobuf"
JSON = "application/json"


class _Reject(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _Reject(413, f"the request body is {declared} bytes; the limit is {limit}.")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _Reject(413, f"the request body exceeds the limit of {limit} bytes.")
        chunks.append(chunk)
    return b"".join(chunks)


def _gunzip(body: bytes, limit: int) -> bytes:
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        data = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise _Reject(400, f"the gzip body is corrupt ({exc}).") from None
    if len(data) > limit or inflater.unconsumed_tail:
        raise _Reject(413, f"the decompressed body exceeds the limit of {limit} bytes.")
    if not inflater.eof:
        raise _Reject(400, "the gzip body is truncated.")
    return data


def _decode(body: bytes, media: str) -> DecodedBatch:
    try:
        if media == PROTOBUF:
            return decode_request(parse_request(body))
        try:
            document = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise _Reject(400, f"the body is not valid JSON (or not UTF-8): {exc}.") from None
        return decode_document(document)
    except TraceFormatError as exc:
        raise _Reject(400, f"the body {exc}" if not exc.field else str(exc)) from None


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


def _error(status: int, message: str, media: str) -> Response:
    # OTLP/HTTP answers errors with a google.rpc.Status; its message is what exporters log.
    if media == PROTOBUF:
        status_pb2 = importlib.import_module("google.rpc.status_pb2")

        return Response(status_pb2.Status(code=3 if status == 400 else 8 if status == 413 else 14,
                               message=message).SerializeToString(),
                        status_code=status, media_type=PROTOBUF)
    return JSONResponse({"code": status, "message": message}, status_code=status)


def create_app(ingestor: Ingestor, *, max_body_bytes: int = DEFAULT_MAX_BODY) -> Starlette:
    """The OTLP/HTTP application, writing through ``ingestor``."""

    async def export(request: Request) -> Response:
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        reply_media = media if media in (PROTOBUF, JSON) else JSON
        try:
            if media not in (PROTOBUF, JSON):
                raise _Reject(415, f"content type {media or '(none)'!r} is not supported; "
                                   f"send {PROTOBUF} or {JSON}.")
            encoding = request.headers.get("content-encoding", "identity").strip().lower()
            if encoding not in ("gzip", "identity", ""):
                raise _Reject(415, f"content encoding {encoding!r} is not supported; "
                                   "send gzip or identity.")
            body = await _read_body(request, max_body_bytes)
            if encoding == "gzip":
                body = _gunzip(body, max_body_bytes)
            batch = _decode(body, media)
            if batch.rejected and not batch.spans:
                raise _Reject(400, f"every span was rejected: {batch.error}")
            if not ingestor.healthy:
                raise _Reject(503, "the processor is shutting down; retry later.")
            try:
                await asyncio.wrap_future(ingestor.submit(batch.spans))
            except Exception as exc:  # store failure or shutdown: retryable
                raise _Reject(503, f"the spans could not be stored ({exc}); retry later.") from exc
        except _Reject as reject:
            return _error(reject.status, reject.message, reply_media)
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

    return Starlette(
        routes=[
            Route("/v1/traces", export, methods=["POST"]),
            Route("/health", health, methods=["GET"]),
        ]
    )
