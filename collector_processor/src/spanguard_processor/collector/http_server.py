"""OTLP/HTTP receiver: ``POST /v1/traces`` (protobuf or JSON, optionally gzip) and ``GET /health``.

``POST /v1/logs`` is the same route for log records, with the same checks and statuses: the
request is put in the span form first (``collector/logs_receive.py``).

A plain ASGI application served by uvicorn (no web framework: two routes need none, and a
framework's layers cost CPU on every request — bench/bench_ingest.py). Every failure is
answered with the right status and a message, and never stores anything half-way:

* 415 — a content type other than ``application/x-protobuf`` / ``application/json``, or a content
  encoding other than ``gzip`` / ``identity``;
* 413 — a body over ``max_body_bytes``, before or after decompression (a gzip bomb stops at the
  limit, it is never inflated whole);
* 400 — garbage protobuf, invalid JSON or UTF-8, a malformed OTLP document, corrupt or
  truncated gzip or bytes after its last member, or a request whose spans all lack valid ids;
* 401 — a bearer token is configured and the request does not carry it;
* 404 — another path; 405 — another method (``Allow`` says which);
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
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from traceback import format_exc
from typing import Any

import orjson

from ..ingest.codec import Codec, Media
from ..ingest.codec_json import JSON_CODEC
from ..ingest.spans import DecodedBatch
from .admission import Reservation
from .connections import RateLimitedLog
from .health import Health
from .limits import DEFAULT_MAX_BODY
from .logs_receive import LogsReceiver
from .os_threads import name_os_thread
from .receive import CODECS, Received, Receiver, Refusal, Refused
from .security import OPEN_PATHS, token_matches

__all__ = ["HttpApp", "create_app"]

#: tracebacks of requests that failed unexpectedly, one every 10 s at most (a client repeating
#: the request that found a bug must not flood the log)
_UNEXPECTED = RateLimitedLog()

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

BODY_TIMEOUT = 30.0  # seconds for a request body to arrive (the headers: connections.py)
INLINE_DECODE_MAX = 256 * 1024  # larger bodies (and every gzip body) decode on a worker thread

_STATUS = {
    Refusal.MALFORMED: 400,
    Refusal.TOO_LARGE: 413,
    Refusal.OVERLOADED: 429,
    Refusal.REDACTION_FAILED: 500,
    Refusal.UNAVAILABLE: 503,
}
_TEXT = b"text/plain; charset=utf-8"


class _Reject(Exception):
    """A refusal of HTTP's own (415, 408)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class _Disconnected(Exception):
    """The client hung up before its body was in: there is no one to answer."""


def _too_large(message: str) -> Refused:
    return Refused(Refusal.TOO_LARGE, message)


def _raw_header(scope: Scope, name: bytes) -> bytes | None:
    """The first value of header ``name`` (lowercase, as ASGI servers give them), or None."""
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value)
    return None


def _header(scope: Scope, name: bytes) -> str | None:
    value = _raw_header(scope, name)
    return None if value is None else value.decode("latin-1")


async def _read_body(
    receive: Receive, declared: str | None, limit: int, timeout: float = BODY_TIMEOUT
) -> bytes:
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(f"the request body is {declared} bytes; the limit is {limit}.")
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout):
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise _Disconnected
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > limit:
                    raise _too_large(f"the request body exceeds the limit of {limit} bytes.")
                if chunk:
                    chunks.append(chunk)
                if not message.get("more_body", False):
                    break
    except TimeoutError:
        raise _Reject(408, f"the request body did not arrive within {timeout:g} s.") from None
    return b"".join(chunks)  # one chunk: that very object (bytes.join copies nothing)


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
            raise Refused(
                Refusal.MALFORMED, f"{len(rest)} byte(s) after the gzip data are not a gzip member."
            )


def _size_hint(body: bytes, gzipped: bool, limit: int) -> int:
    """The body's decoded size as far as it can be told without decoding: a gzip member's
    trailer records its uncompressed size (an exporter's claim, checked after inflating)."""
    if not gzipped or len(body) < 4:
        return len(body)
    return max(len(body), min(int.from_bytes(body[-4:], "little"), limit))


def _codec(scope: Scope) -> Codec:
    """The codec of the request's content type; 415 for one that is not OTLP."""
    media = (_header(scope, b"content-type") or "").split(";")[0].strip().lower()
    codec = CODECS.get(media)
    if codec is None:
        raise _Reject(
            415,
            f"content type {media or '(none)'!r} is not supported; "
            f"send {Media.PROTOBUF} or {Media.JSON}.",
        )
    return codec


def _gzipped(scope: Scope) -> bool:
    """Whether the body is gzipped; 415 for an encoding other than gzip or identity."""
    encoding = (_header(scope, b"content-encoding") or "identity").strip().lower()
    if encoding not in ("gzip", "identity", ""):
        raise _Reject(
            415, f"content encoding {encoding!r} is not supported; send gzip or identity."
        )
    return encoding == "gzip"


async def _answer(
    send: Send,
    status: int,
    body: bytes,
    media: bytes,
    headers: tuple[tuple[bytes, bytes], ...] = (),
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", media),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _traces_reply(codec: Codec, batch: DecodedBatch) -> bytes:
    return codec.traces_reply(batch)


def _logs_reply(codec: Codec, batch: DecodedBatch) -> bytes:
    return codec.logs_reply(batch)


_RPC_CODES = {400: 3, 408: 4, 413: 8, 429: 8}  # INVALID_ARGUMENT, DEADLINE_EXCEEDED,
#                                             RESOURCE_EXHAUSTED; else UNAVAILABLE


async def _error(send: Send, status: int, message: str, codec: Codec, retry_after: int) -> None:
    # OTLP/HTTP answers errors with a google.rpc.Status; its message is what exporters log.
    # 429 and 503 are the statuses OTLP exporters retry; Retry-After says when.
    headers = ((b"retry-after", str(retry_after).encode()),) if status in (429, 503) else ()
    body = codec.error_reply(status, _RPC_CODES.get(status, 14), message)
    await _answer(send, status, body, codec.content_type, headers)


class _Export:
    """``POST /v1/traces``: HTTP's checks, then the shared :class:`Receiver`."""

    def __init__(
        self,
        receiver: Receiver,
        max_body_bytes: int,
        body_timeout: float,
        decoders: int,
        *,
        decoder: ThreadPoolExecutor | None = None,
        respond: Callable[[Codec, DecodedBatch], bytes] = _traces_reply,
    ) -> None:
        self.receiver = receiver
        self.max_body_bytes = max_body_bytes
        self.body_timeout = body_timeout
        self.respond = respond
        self.decoder = (
            decoder
            if decoder is not None
            else ThreadPoolExecutor(
                max_workers=decoders,
                thread_name_prefix="spanguard-decode",
                initializer=name_os_thread,
            )
        )

    async def export(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            codec = _codec(scope)
        except _Reject as reject:  # answered in JSON
            return await self._error(send, reject.status, reject.message, JSON_CODEC)
        try:
            batch = await self._export(scope, receive, codec)
        except _Reject as reject:
            return await self._error(send, reject.status, reject.message, codec)
        except Refused as refused:
            return await self._error(send, _STATUS[refused.kind], refused.message, codec)
        except _Disconnected:
            return None
        except Exception:  # a bug: answered 500, its traceback logged at most every 10 s
            _UNEXPECTED.warning("unexpected", f"an OTLP/HTTP request failed:\n{format_exc()}")
            return await self._error(send, 500, "the request failed unexpectedly.", codec)
        await _answer(send, 200, self.respond(codec, batch), codec.content_type)

    async def _error(self, send: Send, status: int, message: str, codec: Codec) -> None:
        await _error(send, status, message, codec, self.receiver.limits.retry_after)

    async def _export(self, scope: Scope, receive: Receive, codec: Codec) -> DecodedBatch:
        receiver, limit = self.receiver, self.max_body_bytes
        gzipped = _gzipped(scope)
        declared = _header(scope, b"content-length")
        if (
            declared is not None
            and declared.isdigit()
            and not receiver.admission.fits(receiver.estimate(min(int(declared), limit)))
        ):
            raise receiver.overloaded()  # busy: refuse before reading (nothing held meanwhile)
        body = await _read_body(receive, declared, limit, self.body_timeout)
        reservation = receiver.admit(_size_hint(body, gzipped, limit))  # before any work
        try:
            if gzipped or len(body) > INLINE_DECODE_MAX:
                received = await asyncio.get_running_loop().run_in_executor(
                    self.decoder, self._receive, body, codec, gzipped, reservation
                )
            else:  # a millisecond or two: cheaper than a hop to a worker thread and back
                received = self._receive(body, codec, gzipped, reservation)
        finally:  # e.g. the client hung up while its body was decoded
            receiver.release_unless_stored(reservation)
        await receiver.wait_async(received)
        return received.batch

    def _receive(
        self, body: bytes, codec: Codec, gzipped: bool, reservation: Reservation
    ) -> Received:
        if gzipped:
            body = _gunzip(body, self.max_body_bytes)
        return self.receiver.receive(body, codec, reservation)


class BearerAuth:
    """ASGI middleware: every HTTP request but ``/health`` needs the bearer token."""

    def __init__(self, app: App, token: bytes) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        if token_matches(self.token, _raw_header(scope, b"authorization")):
            await self.app(scope, receive, send)
            return
        await _answer(
            send,
            401,
            b'{"code":16,"message":"a valid bearer token is required."}',
            b"application/json",
            ((b"www-authenticate", b"Bearer"),),
        )


class HttpApp:
    """The OTLP/HTTP application: a plain ASGI callable (two routes need no framework, and
    each layer of one costs CPU on every request)."""

    def __init__(
        self,
        receiver: Receiver,
        max_body_bytes: int,
        token: bytes | None,
        decoders: int,
        body_timeout: float,
        health: Callable[[], Health] | None = None,
    ) -> None:
        self._health_of = health
        self._export = _Export(receiver, max_body_bytes, body_timeout, decoders)
        self.decoder = self._export.decoder  # shut it down after the server stopped
        self._logs = _Export(
            LogsReceiver.beside(receiver),
            max_body_bytes,
            body_timeout,
            decoders,
            decoder=self.decoder,
            respond=_logs_reply,
        )
        self._ingestor = receiver.ingestor
        self._handle = BearerAuth(self._route, token) if token else self._route

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":  # nothing else is served (lifespan is off)
            await self._handle(scope, receive, send)

    async def _route(self, scope: Scope, receive: Receive, send: Send) -> None:
        path, method = scope["path"], scope["method"]
        if path in ("/v1/traces", "/v1/logs"):
            if method == "POST":
                export = self._export if path == "/v1/traces" else self._logs
                return await export.export(scope, receive, send)
            return await _answer(send, 405, b"Method Not Allowed", _TEXT, ((b"allow", b"POST"),))
        if path == "/health":
            if method in ("GET", "HEAD"):
                return await self._health(send)
            return await _answer(
                send, 405, b"Method Not Allowed", _TEXT, ((b"allow", b"GET, HEAD"),)
            )
        await _answer(send, 404, b"Not Found", _TEXT)

    async def _health(self, send: Send) -> None:
        ingestor = self._ingestor
        stats = ingestor.stats()
        health = self._health_of() if self._health_of is not None else None
        healthy = ingestor.healthy and (health is None or health.ok)
        document: dict[str, Any] = {
            "status": "ok" if healthy else "unavailable",
            "spans_received": stats.spans_received,
            "spans_duplicated": stats.spans_duplicated,
            "traces_in_flight": stats.traces_in_flight,
            "traces_released": stats.traces_released,
        }
        if health is not None:
            document["parts"] = dict(health.parts)
            document["down"] = list(health.down)
        await _answer(send, 200 if healthy else 503, orjson.dumps(document), b"application/json")


def create_app(
    receiver: Receiver,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY,
    token: bytes | None = None,
    decoders: int = 2,
    body_timeout: float = BODY_TIMEOUT,
    health: Callable[[], Health] | None = None,
) -> HttpApp:
    """The OTLP/HTTP application, writing through ``receiver``; ``token`` requires bearer auth.

    ``decoders`` worker threads decode request bodies (``app.decoder``; shut it down after the
    server stopped); ``health`` reports the state of each part of the processor for
    ``/health`` (collector/health.py).
    """
    return HttpApp(receiver, max_body_bytes, token, decoders, body_timeout, health)
