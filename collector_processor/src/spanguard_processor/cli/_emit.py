"""``--emit-otlp [URL]``: the option shared by ``run``, ``fairness``, ``cases run`` and
``check``, and the one place that sends their results and prints a failure as a warning."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import click

from spanguard.exceptions import ConfigError

from ._common import BadInput

if TYPE_CHECKING:
    from ..emit.events import EvaluationEvent
    from ..emit.otlp import Endpoint
    from ..regression.run.results import CaseOutcome

__all__ = ["FROM_ENV", "emit_option", "resolve_endpoint", "send_case_events", "send_events"]

#: the value of a bare ``--emit-otlp``: the standard OTEL_EXPORTER_OTLP_* variables decide
FROM_ENV = "env"


def emit_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--emit-otlp [URL]``, passed to the command as ``emit_otlp`` (None when not given)."""
    return click.option(
        "--emit-otlp",
        "emit_otlp",
        is_flag=False,
        flag_value=FROM_ENV,
        default=None,
        metavar="[URL]",
        help="Also send the results as OpenTelemetry gen_ai.evaluation.result log records "
        "to URL: an OTLP/HTTP base (http://host:4318) or grpc://host:4317; without URL, "
        "to OTEL_EXPORTER_OTLP_LOGS_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT. A failed "
        "export prints a warning and leaves the exit code alone.",
    )(command)


def resolve_endpoint(value: str | None) -> Endpoint | None:
    """The endpoint ``--emit-otlp`` names, checked before any work (bad: exit 2)."""
    if value is None:
        return None
    from ..emit.otlp import endpoint_from_env, parse_endpoint

    try:
        return endpoint_from_env() if value == FROM_ENV else parse_endpoint(value)
    except ConfigError as exc:
        where = "--emit-otlp" if exc.parameter == "endpoint" else exc.parameter
        raise BadInput(f"{where}: {exc.detail}") from None


def send_events(endpoint: Endpoint | None, events: Sequence[EvaluationEvent]) -> None:
    """Export the events; a failure is a warning on stderr, never a change of exit code."""
    if endpoint is None:
        return
    from ..emit.otlp import emit_events

    result = emit_events(events, endpoint)
    if result.error is not None:
        click.echo(
            f"warning: --emit-otlp: {len(events)} evaluation result(s) not sent: {result.error}.",
            err=True,
        )
    else:
        click.echo(f"sent {result.sent} gen_ai.evaluation.result record(s) to {endpoint}", err=True)


def send_case_events(
    endpoint: Endpoint | None, outcomes: Iterable[CaseOutcome], regressed: Iterable[str] = ()
) -> None:
    """One result per case (``cases run``, ``check``), sent as :func:`send_events` does."""
    if endpoint is None:
        return
    from ..emit.events import case_events

    send_events(endpoint, case_events(outcomes, frozenset(regressed)))
