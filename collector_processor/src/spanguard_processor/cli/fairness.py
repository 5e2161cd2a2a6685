"""``spanguard fairness``: evaluate a suite over recorded traces and gate on the result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ._common import check_files
from ._emit import emit_option
from ._evaluation import GateArgs, begin, conclude, echo_plan, evaluation_options
from ._source import read_source_traces, source_evaluation, source_options
from ._suite_mine import traffic_weights_option

__all__ = ["fairness"]


def _streamed(
    suite: Any, inputs: tuple[Path, ...], traces: Any, config: Any, alpha: float
) -> tuple[Any, int, int]:
    """``--stream``: the records reduced as they are read, then the power of the design at
    the repeats seen (printed after reading, not before)."""
    from ..fairness.pipeline import evaluate_stream, iter_inputs
    from ..fairness.records import observation_from_trace

    if traces is None:
        observations = iter_inputs(list(inputs))
    else:
        observations = (observation_from_trace(t) for t in traces)
    ev, seen = evaluate_stream(suite, observations, config)
    echo_plan(suite, seen.repeats, alpha)
    return ev, seen.unmatched, len(seen.missing_variants)


def _repeats(suite: Any, observations: Any) -> int:
    """Records per variant in the inputs (their median over the suite's recorded variants)."""
    from collections import Counter
    from statistics import median_low

    ids = {v.id for v in suite.variants}
    counts = Counter(o.variant_id for o in observations if o.variant_id in ids)
    return max(1, int(median_low(counts.values()))) if counts else 1


@click.command()
@click.argument("suite_path", metavar="SUITE", type=click.Path(dir_okay=False, path_type=Path))
@click.argument(
    "inputs",
    metavar="TRACES...",
    nargs=-1,
    type=click.Path(dir_okay=False, path_type=Path),
)
@evaluation_options
@source_options
@traffic_weights_option
@emit_option
@click.option(
    "--stream",
    is_flag=True,
    default=False,
    help="Reduce the records to per-(seed, group) sums as they are read: memory flat in "
    "the number of traces (a 2M-trace store in under 1 GB). Same statistics and verdicts; "
    "the reports leave out per-record values, evidence pairs and scenario_results.",
)
@click.pass_context
def fairness(
    ctx: click.Context,
    suite_path: Path,
    inputs: tuple[Path, ...],
    output: Path | None,
    gate_args: GateArgs,
    fmt: str,
    plugins: tuple[str, ...],
    trace_url: str | None,
    redact: bool,
    label: str | None,
    emit_otlp: str | None,
    source: str | None = None,
    since: Any = None,
    until: Any = None,
    explain: bool = False,
    traffic_weights: bool = False,
    stream: bool = False,
) -> None:
    """Evaluate the fairness SUITE over recorded TRACES and gate on it.

    TRACES are agent-trace JSONL files, fairtrace scenario records (JSONL, a JSON list or
    fairtrace's report.json), span files or the processor's SQLite store; or, with --source,
    the spans where they already live (ClickHouse, Parquet). Records match the suite's
    variants by variant id.

    \b
    Example:
      spanguard fairness suite.yaml traces.jsonl -o fairness-report
      spanguard fairness suite.yaml --source parquet://spans/ -o fairness-report
    Exit codes: 0 pass, 1 gate failed, 2 bad input.
    """
    from ..fairness.pipeline import evaluate_suite, read_inputs
    from ..fairness.records import observations_of
    from ..inputs import guard

    # no output may replace an input; the suite is checked and validated before the traces
    paths: tuple[list[Path], list[Path | None]] = ([suite_path, *inputs], [])
    begun = begin(suite_path, paths, output, plugins, gate_args, (trace_url, redact), emit_otlp)
    suite, config = begun.suite, begun.config
    for path, kind in check_files([(guard.EVALUATION, inputs)]):
        if kind is guard.FileKind.FAIRNESS_REPORT:
            click.echo(
                f"note: {path} is a fairness report; its scenario_results are read as the records.",
                err=True,
            )
    # --source --stream, every metric reduced in SQL: the engine's table (else None)
    reduced = source_evaluation(suite, inputs, (source, since, until, explain), config, stream)
    if reduced is not None:
        ev, unmatched, missing = reduced
    elif stream:
        traces = read_source_traces(inputs, source, since, until, explain)
        ev, unmatched, missing = _streamed(suite, inputs, traces, config, gate_args.alpha)
    else:
        traces = read_source_traces(inputs, source, since, until, explain)
        observations = read_inputs(list(inputs)) if traces is None else observations_of(traces)
        echo_plan(
            suite, _repeats(suite, observations), gate_args.alpha
        )  # the design's power, first
        ev, matched = evaluate_suite(suite, observations, config)
        unmatched, missing = matched.unmatched, len(matched.missing_variants)
    if unmatched:
        click.echo(
            f"note: {unmatched} record(s) match no variant of the suite and were ignored.",
            err=True,
        )
    if missing:
        click.echo(f"note: {missing} variant(s) of the suite have no record.", err=True)
    conclude(ctx, suite_path, begun, ev, output, fmt, label=label, traffic_weights=traffic_weights)
