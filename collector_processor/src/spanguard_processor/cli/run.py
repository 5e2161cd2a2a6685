"""``spanguard run``: call an app in-process for every variant of a suite, then gate."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ._app import app_options, call_progress, load_app
from ._emit import emit_option
from ._evaluation import GateArgs, begin, conclude, echo_plan, evaluation_options
from ._suite_mine import traffic_weights_option

if TYPE_CHECKING:
    from ..fairness.design.suite import Variant
    from ..fairness.records import Observation
    from ..harness.calls import App

__all__ = ["run"]


@click.command()
@click.argument("suite_path", metavar="SUITE", type=click.Path(dir_okay=False, path_type=Path))
@app_options(unit="variant")
@click.option(
    "--traces-out",
    "traces_out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="Write the captured spans (the prompt and the app's answer unless "
    "--redact, model calls with usage, tools, agents) as OTLP-JSON lines, one "
    "per call; spanguard fairness, ingest and cases build read them.",
)
@evaluation_options
@traffic_weights_option
@emit_option
@click.pass_context
def run(
    ctx: click.Context,
    suite_path: Path,
    app_ref: str,
    adapter: str | None,
    adapter_options: tuple[str, ...],
    repeats: int,
    concurrency: int,
    traces_out: Path | None,
    output: Path | None,
    gate_args: GateArgs,
    fmt: str,
    plugins: tuple[str, ...],
    trace_url: str | None,
    redact: bool,
    label: str | None,
    emit_otlp: str | None,
    traffic_weights: bool = False,
) -> None:
    """Run the app over every variant of SUITE, capture its spans, evaluate and gate.

    The suite is validated completely before the first app call. The spans the app emits
    through the spanguard SDK are its trace; an app without spans may return
    {"text": ..., "metadata": {"trace": {...}}} instead. A variant whose call raises is
    reported and the gate fails, but the other variants still run.

    \b
    Example:
      spanguard run fairness.yaml --app myapp:answer --repeats 3 --concurrency 8 -o out
    Exit codes: 0 pass, 1 gate failed (or an app call failed), 2 bad input.
    """
    from ..common.markdown import console_text
    from ..fairness.pipeline import evaluate_suite

    paths = ([suite_path], [traces_out])
    begun = begin(suite_path, paths, output, plugins, gate_args, (trace_url, redact), emit_otlp)
    suite = begun.suite
    app, adapted = load_app(app_ref, adapter, adapter_options)  # its signature, read once
    echo_plan(suite, repeats, gate_args.alpha)  # the design's power, before the first app call
    spans: list[Any] | None = [] if traces_out is not None else None
    observations, errors = _call_app(app, suite.variants, repeats, concurrency, spans)
    if traces_out is not None and spans is not None:
        count = write_span_lines(traces_out, spans, redact=redact)
        click.echo(f"{count} call trace(s) written to {traces_out}", err=True)
    if adapted is not None:
        adapted.raise_problems()  # a response the adapter cannot read is bad input (exit 2)
        if errors and not observations:  # nothing to judge: a setup problem, not a verdict
            raise adapted.all_failed(errors)
    for error in errors:
        click.echo(
            console_text(
                f"app error on {error['id']} (repeat {error['repeat']}): {error['error']}"
            ),
            err=True,
        )
    ev, _ = evaluate_suite(suite, observations, begun.config, errors=errors)
    conclude(ctx, suite_path, begun, ev, output, fmt, label=label, traffic_weights=traffic_weights)


def _call_app(
    app: App,
    variants: Sequence[Variant],
    repeats: int,
    concurrency: int,
    spans: list[Any] | None,
) -> tuple[list[Observation], list[dict[str, Any]]]:
    """Every variant ``repeats`` times, with a progress bar on a terminal (never in logs)."""
    from ..fairness.run.runner import run_app

    with call_progress(len(variants) * repeats) as tick:
        if tick is None:
            return run_app(app, variants, repeats=repeats, concurrency=concurrency, spans_out=spans)
        return run_app(
            app, variants, repeats=repeats, concurrency=concurrency, progress=tick, spans_out=spans
        )


def write_span_lines(path: Path, spans: list[Any], *, redact: bool = False) -> int:
    """The spans of each call (one trace) as one OTLP-JSON line, in the order the calls began;
    the request spans carry the prompt and the app's answer unless ``redact``."""
    from spanguard.integration import otlp_json_line

    from ..common.jsonio import write_text_atomic
    from ..harness.recording import without_text

    if redact:
        spans = without_text(spans)
    by_trace: dict[int, list[Any]] = {}
    for span in sorted(spans, key=lambda s: (s.start_time or 0, s.context.span_id)):
        by_trace.setdefault(span.context.trace_id, []).append(span)
    write_text_atomic(path, "".join(otlp_json_line(group) + "\n" for group in by_trace.values()))
    return len(by_trace)
