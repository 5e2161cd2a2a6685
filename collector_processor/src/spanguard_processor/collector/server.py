"""Run the processor: OTLP/gRPC and OTLP/HTTP in one process, one store, one assembler.

:class:`ProcessorServer` starts both receivers (either may be disabled), reports the bound
ports (so port 0 works), and on :meth:`ProcessorServer.stop` — called on SIGTERM or SIGINT by
:func:`serve_forever` — stops accepting requests, finishes the ones in progress, flushes every
trace in flight to the store and closes it.

Start-up fails cleanly, before anything is announced: a port that cannot be bound raises
:class:`CannotListen` naming the receiver and the port; a bad certificate or key raises
``ConfigError`` (from :class:`~spanguard_processor.collector.security.Security`); a damaged or
unwritable store raises an ``InputError``
(from :class:`~spanguard_processor.store.span_store.SpanStore`).
If a receiver or the span writer thread stops after start, :func:`serve_forever` stops the
rest and raises :class:`ReceiverFailed` naming it: the process never stays up half-alive.
"""

from __future__ import annotations

import asyncio
import gc
import ipaddress
import logging
import signal
import socket
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import uvicorn

from spanguard.exceptions import InputError

from ..store.span_store import SpanStore
from .admission import Admission
from .assembler import TraceAssembler
from .connections import (
    HEADER_TIMEOUT,
    RateLimitedLog,
    connection_budget,
    guarded_http,
    loop_exception_handler,
)
from .grpc_server import CALLS_PER_CONNECTION, READ_TIMEOUT, GrpcReceiver
from .health import CHECKING, DISABLED, OK, WEDGED_AFTER, Health, Watchdog
from .http_server import BODY_TIMEOUT, create_app
from .ingestor import Ingestor
from .limits import DEFAULT_MAX_BODY, Limits, Shaper
from .os_threads import name_os_thread
from .receive import Receiver
from .redaction import Redactor
from .security import Security

if TYPE_CHECKING:
    from .http_server import HttpApp

__all__ = ["CannotListen", "ProcessorServer", "ReceiverFailed", "ServerConfig", "serve_forever"]

_log = logging.getLogger(__name__)
_REFUSED_RECENTLY = 5.0  # seconds a refused write keeps the store "refusing writes"


def _run_loop(main: Coroutine[Any, Any, None]) -> None:
    """Run the HTTP receiver's event loop: libuv's (uvloop, 4–5 % less CPU per span than
    asyncio's own: docs/benchmarks-processor.md) where it is installed, else asyncio's."""
    try:
        import uvloop
    except ImportError:  # uvloop is not made for Windows
        asyncio.run(main)
        return
    uvloop.run(main)


class CannotListen(OSError):
    """A receiver's port cannot be bound (in use, not permitted, an unknown address)."""

    def __init__(self, receiver: str, host: str, port: int, reason: str) -> None:
        self.receiver = receiver  # "grpc" or "http"
        self.port = port
        super().__init__(f"{port} on {host} is in use or cannot be bound ({reason}).")


class ReceiverFailed(RuntimeError):
    """A receiver or the span writer stopped while the processor was running."""


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """Everything ``spanguard serve`` can set."""

    store: Path
    host: str = "127.0.0.1"
    grpc_port: int | None = 4317  # None disables the receiver
    http_port: int | None = 4318
    wait_duration: float = 2.0
    num_traces: int = 10_000
    orphan_timeout: float = 60.0
    max_body_bytes: int = DEFAULT_MAX_BODY
    limits: Limits = field(default_factory=Limits)
    security: Security = field(default_factory=Security)
    redactor: Redactor = field(default_factory=Redactor)
    header_timeout: float = HEADER_TIMEOUT  # seconds for an HTTP request's headers to arrive
    body_timeout: float = BODY_TIMEOUT  # seconds for its body
    grpc_read_timeout: float = READ_TIMEOUT  # seconds for a gRPC call's request message
    grpc_calls_per_connection: int = CALLS_PER_CONNECTION  # gRPC calls in flight per connection


class ProcessorServer:
    """Both receivers over one :class:`Ingestor`; ``start()``, then ``stop()``."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        # the checks that read the whole file (quick_check, the checksums of every batch and
        # index row) are the writer's first work, before it stores anything, while the
        # receivers already answer /health (a large store takes seconds)
        self.store = SpanStore(config.store, defer_checks=True)
        assembler = TraceAssembler(
            config.wait_duration, config.num_traces, orphan_timeout=config.orphan_timeout
        )
        self.ingestor = Ingestor(self.store, assembler, background_start=True)
        self.receiver = Receiver(
            self.ingestor, Admission(config.limits), Shaper(config.limits, config.redactor)
        )
        self.grpc_port: int | None = None
        self.http_port: int | None = None
        self._grpc: GrpcReceiver | None = None
        self._http: uvicorn.Server | None = None
        self._http_app: HttpApp | None = None
        self._http_thread: threading.Thread | None = None
        self._watchdog: Watchdog | None = None

    def start(self) -> ProcessorServer:
        """Start both receivers; on failure (a port in use) everything started is stopped."""
        self.ingestor.start()
        try:
            self._start_receivers()
        except BaseException:
            self.stop(grace=1.0)
            raise
        self._describe_writer()
        if self._grpc is not None:
            self._watchdog = Watchdog(self._grpc.ping).start()
        return self

    def _describe_writer(self) -> None:
        """Say in the store's writer lock who writes it and where, so a refused writer can
        name this server (and ``ingest --via`` can send to it)."""
        cfg = self.config
        host = f"[{cfg.host}]" if ":" in cfg.host else cfg.host
        facts: dict[str, str] = {}
        if self.http_port is not None:
            scheme = "https" if cfg.security.tls else "http"
            facts["http"] = f"{scheme}://{host}:{self.http_port}"
        if self.grpc_port is not None:
            facts["grpc"] = f"{host}:{self.grpc_port}"
        self.store.lock.describe("spanguard serve", **facts)

    def _start_receivers(self) -> None:
        cfg = self.config
        receivers = (cfg.grpc_port is not None) + (cfg.http_port is not None)
        budget, backlog = connection_budget(receivers)
        log = RateLimitedLog()
        if cfg.grpc_port is not None:
            try:
                self._grpc = GrpcReceiver(
                    self.receiver,
                    cfg.host,
                    cfg.grpc_port,
                    max_message_bytes=cfg.max_body_bytes,
                    security=cfg.security,
                    max_connections=budget,
                    read_timeout=cfg.grpc_read_timeout,
                    calls_per_connection=cfg.grpc_calls_per_connection,
                )
                self.grpc_port = self._grpc.start()
            except (OSError, RuntimeError) as exc:  # grpcio raises RuntimeError on a busy port
                raise CannotListen("grpc", cfg.host, cfg.grpc_port, str(exc)) from None
        if cfg.http_port is not None:
            sock = socket.socket(socket.AF_INET6 if ":" in cfg.host else socket.AF_INET)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            # Accepted connections inherit this: uvicorn writes a response's head and body
            # separately, and Nagle + delayed ACKs would add ~40 ms to every request.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                sock.bind((cfg.host, cfg.http_port))
            except OSError as exc:
                sock.close()
                raise CannotListen(
                    "http", cfg.host, cfg.http_port, exc.strerror or str(exc)
                ) from None
            self.http_port = sock.getsockname()[1]
            app = self._http_app = create_app(
                self.receiver,
                max_body_bytes=cfg.max_body_bytes,
                token=cfg.security.token,
                body_timeout=cfg.body_timeout,
                health=self.health,
            )
            self._http = uvicorn.Server(
                uvicorn.Config(
                    app,
                    log_level="warning",
                    access_log=False,
                    lifespan="off",
                    proxy_headers=False,  # clients are not looked up: no rewrite
                    timeout_graceful_shutdown=10,
                    timeout_keep_alive=5,
                    backlog=backlog,
                    http=guarded_http(budget, cfg.header_timeout, log),
                    ssl_certfile=cfg.security.tls_cert,
                    ssl_keyfile=cfg.security.tls_key,
                )
            )
            server = self._http
            # Not the main thread, so uvicorn installs no signal handlers: stop() owns shutdown.
            handler = loop_exception_handler(log)

            async def serve_http() -> None:
                name_os_thread()
                asyncio.get_running_loop().set_exception_handler(handler)
                await server.serve(sockets=[sock])

            self._http_thread = threading.Thread(
                target=lambda: _run_loop(serve_http()), name="spanguard-http", daemon=True
            )
            self._http_thread.start()
            while not server.started and self._http_thread.is_alive():
                threading.Event().wait(0.01)
            if not server.started:
                raise ReceiverFailed("the OTLP/HTTP receiver failed to start (see the log).")

    def wait_started(self, stop: threading.Event | None = None) -> None:
        """Wait until the writer takes requests (the store checked, pending traces resumed),
        or until ``stop`` is set; a store found damaged meanwhile is raised as the
        ``InputError`` it is."""
        while self.ingestor.starting is not None and self.ingestor.writer_alive:
            if stop is not None and stop.is_set():
                return
            time.sleep(0.01)
        failure = self.ingestor.failure
        if isinstance(failure, InputError):
            raise failure

    def health(self) -> Health:
        """The state of each part (collector/health.py), as ``/health`` reports it."""
        now = time.monotonic()
        return Health(
            (
                ("http", self._http_state()),
                ("grpc", self._grpc_state(now)),
                ("writer", self._writer_state(now)),
                ("store", self._store_state(now)),
            )
        )

    def _http_state(self) -> str:
        if self._http_thread is None:
            return DISABLED
        return OK if self._http_thread.is_alive() else "down: the OTLP/HTTP receiver stopped"

    def _grpc_state(self, now: float) -> str:
        if self._grpc is None:
            return DISABLED
        if not self._grpc.alive():
            return "down: the OTLP/gRPC receiver stopped"
        silent = now - self._grpc.last_seen
        if silent > WEDGED_AFTER:
            return f"wedged: its event loop has not run for {silent:.0f} s"
        return OK

    def _writer_state(self, now: float) -> str:
        if not self.ingestor.writer_alive:
            return "down: the span writer stopped"
        starting = self.ingestor.starting
        if starting is not None:
            return f"starting: {starting}"
        silent = now - self.ingestor.beat
        if silent > WEDGED_AFTER:
            return f"wedged: the span writer has been stuck for {silent:.0f} s"
        return OK

    def _store_state(self, now: float) -> str:
        failure = self.ingestor.failure
        if failure is not None:
            return f"failed: {type(failure).__name__}: {failure}"
        checking = self.store.checking
        if checking is not None:
            return f"{CHECKING}: {checking}"
        refused = self.ingestor.refused
        if refused is not None and now - refused[0] < _REFUSED_RECENTLY:
            return f"refusing writes ({refused[1]}); retrying"
        return OK

    def failure(self) -> str | None:
        """Which part has stopped on its own, if one has (None while all run): a receiver
        (its thread ended, or its server terminated), the span writer thread, or the store
        (an error the writer cannot carry on from)."""
        return self.health().failed()

    def stop(self, grace: float = 10.0) -> None:
        """Finish in-flight requests, flush in-flight traces to the store, close it."""
        if self._watchdog is not None:
            self._watchdog.stop()
        if self._http is not None and self._http_thread is not None:
            self._http.should_exit = True
            self._http_thread.join(grace)
        if self._http_app is not None:
            self._http_app.decoder.shutdown(wait=False)
        if self._grpc is not None:
            self._grpc.stop(grace)
            self._grpc = None
        self.ingestor.close(flush=True)
        self.store.close()


def serve_forever(
    config: ServerConfig,
    announce: Callable[[str], Any] = print,
    *,
    warn: Callable[[str], Any] | None = None,
    started: Callable[[ProcessorServer], Any] | None = None,
) -> ProcessorServer:
    """Start, announce the listening ports, wait for SIGTERM/SIGINT, then stop gracefully.

    ``warn`` receives warnings (default: ``announce``), which name settings as parameters in
    backticks (a command spells them as its options); ``started`` is called with the running
    server once it listens. Raises :class:`ReceiverFailed` (after stopping everything) if a
    receiver or the span writer stops on its own. A SIGTERM/SIGINT while starting (a large
    store's checks take seconds) stops gracefully too, without announcing the ports: no new
    request is taken, those in progress are answered.
    """
    stop = threading.Event()

    def _on_signal(signum: int, frame: object) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        server = ProcessorServer(config).start()
        try:
            server.wait_started(stop)
            if not stop.is_set():
                _serve(server, stop, announce, warn or announce, started)
        finally:
            server.stop()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    stats = server.ingestor.stats()
    announce(
        f"stopped: {stats.spans_received} spans received, {stats.traces_released} traces released"
    )
    return server


def _serve(
    server: ProcessorServer,
    stop: threading.Event,
    announce: Callable[[str], Any],
    warn: Callable[[str], Any],
    started: Callable[[ProcessorServer], Any] | None,
) -> None:
    """Announce the ports and serve until ``stop`` is set or a part stops on its own."""
    config = server.config
    # what starting made (modules, protobuf descriptors, the app) lives as long as the process:
    # keep it out of every later collection, which then only walks what requests allocate
    gc.collect()
    gc.freeze()
    # the GIL's switch interval follows the requests in flight (collector/admission.py)
    parts = []
    if server.grpc_port is not None:
        parts.append(f"OTLP/gRPC on {config.host}:{server.grpc_port}")
    if server.http_port is not None:
        scheme = "https" if config.security.tls else "http"
        parts.append(f"OTLP/HTTP on {scheme}://{config.host}:{server.http_port}/v1/traces")
    announce(f"spanguard processor listening: {', '.join(parts)}; store {config.store}")
    exposure = _exposure(config)
    if exposure:
        warn(f"warning: listening on {config.host} {exposure}")
    if started is not None:
        started(server)
    while not stop.wait(0.5):
        failure = server.failure()
        if failure:
            _log.error("%s; stopping the processor", failure)
            raise ReceiverFailed(
                f"{failure}; the processor stopped too (restart it; nothing acknowledged is lost)."
            )


def _exposure(config: ServerConfig) -> str | None:
    """Why listening on ``config.host`` is risky, or None (loopback, or token and TLS)."""
    host = config.host.strip("[]")
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if loopback:
        return None
    if config.security.token is None:
        return (
            "without a bearer token: anyone who can reach these ports can write spans "
            "(set `token_file` or SPANGUARD_TOKEN, and `tls_cert`/`tls_key`)."
        )
    if not config.security.tls:
        return (
            "without TLS: the bearer token and the spans cross the network in clear text "
            "(set `tls_cert`/`tls_key`)."
        )
    return None
