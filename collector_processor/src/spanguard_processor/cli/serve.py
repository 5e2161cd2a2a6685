"""``spanguard serve``: the OTLP processor (gRPC + HTTP) writing to a SQLite span store."""

from __future__ import annotations

from pathlib import Path

import click

from spanguard.exceptions import ConfigError, InputError

from ..collector.grpc_server import CALLS_PER_CONNECTION, READ_TIMEOUT
from ..collector.limits import Limits
from ..collector.redaction import Redactor, load_hook
from ..collector.security import TOKEN_ENV, Security, read_token
from ..collector.server import CannotListen, ReceiverFailed, ServerConfig, serve_forever
from ._common import in_command_terms, stored_redact_option

__all__ = ["serve"]

_DEFAULTS = Limits()


def _port(value: int, name: str) -> int | None:
    if value == -1:
        return None
    if not 0 <= value <= 65535:
        raise ConfigError(name, f"{value} is not a TCP port (0 picks a free one, -1 disables).")
    return value


@click.command()
@click.option(
    "--store",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("spanguard.db"),
    show_default=True,
    help="SQLite span store (created if missing; reopened and resumed if present).",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on (use 0.0.0.0 only behind a trusted network).",
)
@click.option(
    "--grpc-port",
    type=int,
    default=4317,
    show_default=True,
    help="OTLP/gRPC port; 0 picks a free port, -1 disables gRPC.",
)
@click.option(
    "--http-port",
    type=int,
    default=4318,
    show_default=True,
    help="OTLP/HTTP port (/v1/traces, /v1/logs, /health); 0 picks a free port, -1 disables.",
)
@click.option(
    "--wait-duration",
    type=float,
    default=2.0,
    show_default=True,
    help="Seconds of silence after the root span before a trace is released.",
)
@click.option(
    "--num-traces",
    type=int,
    default=10_000,
    show_default=True,
    help="Most traces held in flight; the least recently active is released early.",
)
@click.option(
    "--orphan-timeout",
    type=float,
    default=60.0,
    show_default=True,
    help="Seconds of silence after which a trace whose root never came is released "
    "(marked partial).",
)
@click.option(
    "--max-body-mib",
    type=float,
    default=16.0,
    show_default=True,
    help="Largest request accepted, before and after decompression.",
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help=f"File holding a bearer token every OTLP request must carry (or set "
    f"{TOKEN_ENV}); compared in constant time.",
)
@click.option(
    "--tls-cert",
    type=click.Path(dir_okay=False, path_type=Path),
    help="PEM certificate chain: both receivers then speak TLS only.",
)
@click.option(
    "--tls-key",
    type=click.Path(dir_okay=False, path_type=Path),
    help="PEM private key for --tls-cert.",
)
@click.option(
    "--max-attributes",
    type=int,
    default=_DEFAULTS.max_attributes_per_span,
    show_default=True,
    help="Attributes kept per span or event; the rest are dropped.",
)
@click.option(
    "--max-spans-per-trace",
    type=int,
    default=_DEFAULTS.max_spans_per_trace,
    show_default=True,
    help="Spans accepted per trace; later ones are rejected.",
)
@click.option(
    "--max-pending-spans",
    type=int,
    default=_DEFAULTS.max_pending_spans,
    show_default=True,
    help="Spans that may wait for the store; beyond it requests get 429 / "
    "RESOURCE_EXHAUSTED (retryable).",
)
@click.option(
    "--grpc-read-timeout",
    type=float,
    default=READ_TIMEOUT,
    show_default=True,
    help="Seconds a gRPC call's request message may take to arrive; a slower call "
    "ends DEADLINE_EXCEEDED.",
)
@click.option(
    "--grpc-calls-per-connection",
    type=int,
    default=CALLS_PER_CONNECTION,
    show_default=True,
    help="gRPC calls one connection may have in flight; more end RESOURCE_EXHAUSTED.",
)
@stored_redact_option
@click.option(
    "--redact-hook",
    metavar="MODULE:FUNCTION",
    help="Call FUNCTION(key, text) -> text | None on every string of every span "
    "(attribute values and keys at any depth, names, status messages, "
    "trace_state) before it is stored (None drops it).",
)
def serve(
    store: Path,
    host: str,
    grpc_port: int,
    http_port: int,
    wait_duration: float,
    num_traces: int,
    orphan_timeout: float,
    max_body_mib: float,
    token_file: Path | None,
    tls_cert: Path | None,
    tls_key: Path | None,
    max_attributes: int,
    max_spans_per_trace: int,
    max_pending_spans: int,
    grpc_read_timeout: float,
    grpc_calls_per_connection: int,
    redact: bool,
    redact_hook: str | None,
) -> None:
    """Receive OTLP spans and log records, assemble whole agent traces and store them durably.

    A request is acknowledged only after its spans are committed to the store. SIGTERM or
    Ctrl-C stops gracefully: requests in progress finish and traces in flight are flushed.
    Log records (GenAI events, gen_ai.evaluation.result) are stored with the span they name.

    \b
    Example:
      spanguard serve --store spans.db
      spanguard traces export --store spans.db -f fairtrace -o records.jsonl
    """
    if wait_duration < 0:
        raise ConfigError("--wait-duration", "must not be negative.")
    if num_traces < 1:
        raise ConfigError("--num-traces", "must be at least 1.")
    if max_body_mib <= 0:
        raise ConfigError("--max-body-mib", "must be positive.")
    grpc, http = _port(grpc_port, "--grpc-port"), _port(http_port, "--http-port")
    if grpc is None and http is None:
        raise ConfigError("--grpc-port", "both receivers are disabled; enable at least one.")
    if grpc_read_timeout <= 0:
        raise ConfigError("--grpc-read-timeout", "must be positive.")
    for name, value in (
        ("--max-attributes", max_attributes),
        ("--grpc-calls-per-connection", grpc_calls_per_connection),
        ("--max-spans-per-trace", max_spans_per_trace),
        ("--max-pending-spans", max_pending_spans),
    ):
        if value < 1:
            raise ConfigError(name, "must be at least 1.")
    config = ServerConfig(
        store=store,
        host=host,
        grpc_port=grpc,
        http_port=http,
        wait_duration=wait_duration,
        num_traces=num_traces,
        orphan_timeout=orphan_timeout,
        max_body_bytes=int(max_body_mib * 1024 * 1024),
        limits=Limits(
            max_attributes_per_span=max_attributes,
            max_spans_per_trace=max_spans_per_trace,
            max_pending_spans=max_pending_spans,
        ),
        security=Security(read_token(token_file), tls_cert, tls_key),
        grpc_read_timeout=grpc_read_timeout,
        grpc_calls_per_connection=grpc_calls_per_connection,
        redactor=Redactor(redact, load_hook(redact_hook) if redact_hook else None),
    )
    try:
        serve_forever(
            config,
            announce=lambda line: click.echo(line),
            warn=lambda line: click.echo(in_command_terms(line), err=True),
        )
    except InputError as exc:  # the store: damaged, foreign, newer or not writable
        raise ConfigError("--store", str(exc)) from None
    except CannotListen as exc:
        raise ConfigError(f"--{exc.receiver}-port", str(exc)) from None
    except ReceiverFailed as exc:
        raise Failed(str(exc)) from None


class Failed(click.ClickException):
    """The processor stopped on its own: exit code 3 (not bad input, not a passing run)."""

    exit_code = 3
