"""``spanguard cases build|run|plan``: regression cases from production traces."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..regression.vocabulary import SelectMode
from ._app import app_options
from ._cases_build_lines import build_summary, build_warnings, problem_lines
from ._cases_plan import DEFAULT_REPEATS, plan
from ._common import BadInput, check_files, exit_gate, output_option, renamed
from ._emit import emit_option, resolve_endpoint, send_case_events
from ._source import check_source_usage, read_source_traces, recorded_traces, source_options

if TYPE_CHECKING:  # the commands' modules load numpy and scipy: imported when a command runs
    from ..regression.case import Case
    from ..regression.run.outputs import Outputs
    from ..regression.run.results import Failure
    from ..regression.run.run import RunResult

__all__ = ["cases"]

_FILE = click.Path(dir_okay=False, path_type=Path)


@click.group()
def cases() -> None:
    """Mine regression cases from traces (trace2eval-compatible) and run them."""


cases.add_command(plan)


@cases.command()
@click.argument("inputs", metavar="INPUTS...", nargs=-1, type=_FILE)
@source_options
@output_option(
    directory=True,
    default=Path("evalset"),
    show_default=True,
    help="Folder for cases.jsonl, report.md and expectations.template.jsonl.",
)
@renamed(
    "--out",
    target="output",
    renamed_to="--output",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
)
@click.option("--max-cases", type=int, default=50, show_default=True, help="Cap on cases.")
@click.option(
    "--min-score",
    type=float,
    default=1.0,
    show_default=True,
    help="Lowest signal score that selects a case first (with --select signals: the only ones "
    "kept).",
)
@click.option(
    "--dedup-threshold",
    type=float,
    default=0.6,
    show_default=True,
    help="Jaccard similarity at which two questions are the same.",
)
@click.option("--similarity", metavar="MODULE:FUNCTION", help="Custom matcher (slow).")
@click.option("--expectations", type=_FILE, help="Default: OUTPUT/expectations.jsonl.")
@click.option(
    "--ids",
    type=click.Choice(["stable", "sequential"]),
    default="stable",
    show_default=True,
    help="stable: case-<hash of the question>; sequential: case-001.",
)
@click.option(
    "--max-line-bytes",
    type=int,
    default=1 << 20,
    show_default=True,
    help="Longer lines are skipped.",
)
@click.option(
    "--no-timing-checks",
    is_flag=True,
    help="Latency and cost neither select cases (slow/expensive signals) nor limit them.",
)
@click.option(
    "--select",
    "selection",
    type=click.Choice([mode.value for mode in SelectMode]),
    default="coverage",
    show_default=True,
    help="coverage: a case for every question and process path; signals: only questions "
    "with a failure signal (trace2eval's selection).",
)
@click.option("--strict", is_flag=True, help="Exit 2 if any input line was skipped.")
def build(
    inputs: tuple[Path, ...],
    output: Path,
    max_cases: int,
    min_score: float,
    dedup_threshold: float,
    similarity: str | None,
    expectations: Path | None,
    ids: str,
    max_line_bytes: int,
    no_timing_checks: bool,
    selection: str,
    strict: bool,
    source: str | None = None,
    since: Any = None,
    until: Any = None,
    explain: bool = False,
) -> None:
    """Build cases.jsonl, report.md and an expectations template from INPUTS.

    INPUTS are trace2eval JSONL logs, spanguard agent traces (JSONL), span stores or OTLP span
    files (.gz too), told apart by content; or, with --source, the spans where they already
    live (ClickHouse, Parquet: docs/sql-map.md), the same cases as from their export. Bad
    lines are reported by file and line and skipped; the rest of the log still counts
    (--strict makes any skip exit 2).

    Every question gets a case (--select coverage), checked against its recorded answer and
    process; --select signals keeps only questions with a failure signal, as trace2eval does;
    the share of questions and requests covered is printed. Near-duplicate questions (numbers,
    amounts, ids and dates are slots) are one case per path they took (tools, escalation,
    friction, plan length, a refusal). Every mined check passes on the clean traces it came
    from; slow or costly cases get a latency/cost limit from their question's own spread
    (1.5 x its p95, with 8+ clean runs); --no-timing-checks leaves timing out entirely.

    \b
    Example:
      spanguard cases build traces.jsonl -o evalset
      spanguard cases build spans.db --ids sequential --max-cases 100
      spanguard cases build --source parquet://spans/ -o evalset
    """
    from ..inputs import guard
    from ..regression.mine.build import BuildOptions, NoUsableRows, build_evalset

    check_source_usage(inputs, source, bool(since or until or explain), "INPUTS...")
    template = expectations.with_name("expectations.template.jsonl") if expectations else None
    check_files(
        [(guard.TRACE_LOG, inputs), (guard.EXPECTATIONS, expectations)],
        [template],
        directories=[(output, ["cases.jsonl", "report.md", "expectations.template.jsonl"])],
    )
    recorded = recorded_traces(inputs, source, since, until, explain, inputs_name="INPUTS...")
    options = BuildOptions(
        out=output,
        max_cases=max_cases,
        min_score=min_score,
        dedup_threshold=dedup_threshold,
        similarity=similarity,
        expectations=expectations,
        sequential_ids=ids == "sequential",
        timing_checks=not no_timing_checks,
        max_line_bytes=max_line_bytes,
        select=selection,
    )
    try:
        result = build_evalset(list(inputs) if recorded is None else recorded, options)
    except NoUsableRows as exc:
        for line in problem_lines(exc.problems):
            click.echo(line, err=True)
        raise
    for line in build_warnings(result):
        click.echo(line, err=True)
    for line in build_summary(result):
        click.echo(line)
    if strict and result.skipped:
        raise BadInput(
            f"{result.skipped} input line(s) were skipped (see above) and --strict "
            "is set; the case set was written from the rest."
        )


@cases.command()
@click.option("--cases", "cases_path", type=_FILE, required=True, help="cases.jsonl.")
@click.option("--outputs", type=_FILE, help="JSONL of {id, output, ...} records.")
@click.option("--traces", type=_FILE, multiple=True, help="Agent-trace JSONL (repeatable).")
@source_options
@app_options(
    unit="case",
    required=False,
    repeats_help=f"Calls per case with --app [default: {DEFAULT_REPEATS}, the size check's "
    "calibration was measured at; see `cases plan`].",
)
@output_option(help="Write the run result (metrics JSON) here; `check` reads it.")
@renamed("--out", target="output", renamed_to="--output", type=_FILE, default=None)
@click.option("--min-pass-rate", type=float, help="Exit 1 below this pass rate.")
@click.option("--show-failures", is_flag=True, help="List failing cases and checks.")
@click.option("--markdown", type=_FILE, help="Also write the metrics table as Markdown.")
@click.option("--junit", type=_FILE, help="Also write JUnit XML (one testcase per case).")
@emit_option
def run(
    cases_path: Path,
    outputs: Path | None,
    traces: tuple[Path, ...],
    app_ref: str | None,
    adapter: str | None,
    adapter_options: tuple[str, ...],
    repeats: int | None,
    concurrency: int,
    output: Path | None,
    min_pass_rate: float | None,
    show_failures: bool,
    markdown: Path | None,
    junit: Path | None,
    emit_otlp: str | None,
    source: str | None = None,
    since: Any = None,
    until: Any = None,
    explain: bool = False,
) -> None:
    """Score candidate outputs (or agent traces, or the app itself) against a case set.

    With --app, the app is called on every case's input --repeats times (the harness of
    `spanguard run`: app(prompt) or app(prompt, assignments), plain or async, its spans
    captured through the SDK); a call that raises is reported and counted as a failed repeat.
    With --outputs or --traces, a case finds its records by case id, then by the trace it was
    mined from (source_trace_id), then by its question text; a request none of these reaches
    goes to the case whose template and input range it fits (another day's traffic, new
    values), to neither of two it fits. The counts by kind, and the cases without a record
    (counted as failed, never as passed), are printed. Every run of a case is kept; the -o
    file is what `check` reads.

    --source reads recorded traffic where its spans live (ClickHouse, Parquet:
    docs/sql-map.md) instead of --traces: the same run file as from its export.

    \b
    Example:
      spanguard cases run --cases evalset/cases.jsonl --app agent:answer --repeats 3 -o now.json
      spanguard cases run --cases evalset/cases.jsonl --outputs out.jsonl -o runs/now.json
      spanguard cases run --cases evalset/cases.jsonl --traces new_agent.jsonl -o runs/now.json
      spanguard cases run --cases evalset/cases.jsonl --source parquet://spans/ -o runs/now.json
    """
    from ..evaluation.case_run import conclude_case_run
    from ..inputs import guard
    from ..regression.report.run_files import RunFiles
    from ..regression.run.run import run_cases
    from ._cases_replay import replay_result

    app_options = (adapter, adapter_options, repeats is not None, concurrency != 1)
    _one_source(outputs, traces, source, app_ref, app_options, bool(since or until or explain))
    if min_pass_rate is not None and not 0 <= min_pass_rate <= 1:
        raise click.BadParameter(
            f"must be in [0, 1], got {min_pass_rate}.", param_hint="--min-pass-rate"
        )
    check_files(
        [(guard.CASES, cases_path), (guard.OUTPUTS, outputs), (guard.TRACES, traces)],
        [output, markdown, junit],
    )
    endpoint = resolve_endpoint(emit_otlp)
    if app_ref is not None:
        case_list = _load_cases(cases_path)
        result = replay_result(
            case_list,
            cases_path,
            app_ref,
            adapter,
            adapter_options,
            repeats or DEFAULT_REPEATS,
            concurrency,
        )
    else:
        recorded = None if outputs else _recorded(traces, source, since, until, explain)
        case_list, records = _load_run_inputs(cases_path, outputs, traces, recorded)
        result = run_cases(case_list, records)
    metrics = result.metrics
    outcome = conclude_case_run(result, RunFiles(output, markdown, junit), min_pass_rate)
    click.echo(outcome.table)
    if app_ref is None:
        where = str(outputs or (traces[0] if traces else source))
        _echo_matching(result, len(case_list), where, outputs is None)
    if output is not None:
        click.echo(f"\nwritten -> {output.as_posix()}")
    if show_failures:
        _show_failures(metrics.failures)
    send_case_events(endpoint, result.outcomes)
    if not outcome.passed:
        click.echo(
            f"\nFAIL: pass rate {metrics.pass_rate:.2%} is below the required {min_pass_rate:.2%}",
            err=True,
        )
    exit_gate(outcome.passed)


def _echo_matching(result: RunResult, total: int, source: str, traces: bool) -> None:
    """How the cases found their records, the cases that found none (never a pass), and —
    for traces found by the ids of the requests the cases were mined from — that such a run
    is in-sample (docs/regression.md, "Recorded traffic as the baseline")."""
    from ..regression.report.render import render_matching

    click.echo("\n" + render_matching(result.matching, total))
    in_sample = result.matching["source_trace_id"]
    if traces and in_sample:
        click.echo(
            f"note: {in_sample} case(s) matched the very requests they were mined from: on the "
            "traffic the cases were built from every stable property holds by construction, "
            "so as a check baseline this run reads better than the agent is; a baseline from "
            "other traffic (another day) or a replay (--app) has no such bias."
        )
    if result.requests:
        exact = sum(n["exact"] for n in result.requests.values())
        template = sum(n["template"] for n in result.requests.values())
        click.echo(f"requests: {exact} matched exactly, {template} by template and input range")
    for note in result.notes:
        click.echo(f"note: {note}")
    unmatched = [c for c, outcome in result.case_results.items() if outcome == "missing"]
    if unmatched:
        click.echo(
            f"{len(unmatched)} case(s) without a record, counted as failed (a missing "
            f"case is not a pass): {', '.join(unmatched[:5])}"
            + (" …" if len(unmatched) > 5 else "")
        )
    if total and result.matching["unmatched"] == total:
        click.echo(
            f"warning: no record in {source} matched any of the {total} "
            "case(s) by case id, source_trace_id or question text; this run cannot "
            "serve as a baseline.",
            err=True,
        )


def _one_source(
    outputs: Path | None,
    traces: tuple[Path, ...],
    source: str | None,
    app_ref: str | None,
    app_options: tuple[object, ...],
    window: bool,
) -> None:
    """Exactly one of --outputs, --traces (or --source) and --app; the app's options only
    with --app, a window (--since, --until, --explain) only with --source."""
    if (outputs is not None) + bool(traces or source) + (app_ref is not None) != 1:
        raise click.UsageError("give exactly one of --outputs, --traces, --source or --app.")
    if source is None and window:
        raise click.UsageError("--since, --until and --explain go with --source.")
    if app_ref is None and any(app_options):
        raise click.UsageError(
            "--adapter, --adapter-option, --repeats and --concurrency go with --app."
        )


def _recorded(
    traces: tuple[Path, ...], source: str | None, since: Any, until: Any, explain: bool
) -> list[Any] | None:
    """The agent traces of --source with their outcomes (None with --traces)."""
    return read_source_traces(
        traces, source, since, until, explain, outcomes=True, inputs_name="--traces FILE"
    )


def _load_cases(cases_path: Path) -> list[Case]:
    """The cases to score; none is bad input (exit 2)."""
    from ..regression.run.run import load_cases

    case_list = load_cases(cases_path)
    if not case_list:
        raise BadInput(f"no records in {cases_path}: it holds no case.")
    return case_list


def _load_run_inputs(
    cases_path: Path, outputs: Path | None, traces: tuple[Path, ...], recorded: Any
) -> tuple[list[Case], Outputs]:
    """The cases and the records to score (``recorded``: the agent traces read through
    --source); none of either is bad input (exit 2)."""
    from ..regression.run.outputs import load_outputs, outputs_from_traces, outputs_of
    from ..regression.run.run import load_cases

    case_list = load_cases(cases_path)
    if recorded is not None:
        records = outputs_of(recorded)
    else:
        records = load_outputs(outputs) if outputs is not None else outputs_from_traces(traces)
    for message in records.skipped:
        click.echo(f"skipped: {message}", err=True)
    if not case_list:
        raise BadInput(f"no records in {cases_path}: it holds no case.")
    if not len(records):
        names = ", ".join(str(path) for path in ([outputs] if outputs else traces)) or "--source"
        raise BadInput(
            f"no records in {names}: "
            + (
                "every line was skipped (see above)."
                if records.skipped
                else "it holds no output record."
            )
        )
    return case_list, records


def _show_failures(failures: Sequence[Failure], limit: int = 20) -> None:
    if not failures:
        return
    click.echo("\nFailures:")
    for failure in failures[:limit]:
        detail = ", ".join(failure.failed_checks) or failure.reason
        click.echo(f"  {failure.case_id}: {detail}")
    if len(failures) > limit:
        click.echo(f"  ... and {len(failures) - limit} more")
