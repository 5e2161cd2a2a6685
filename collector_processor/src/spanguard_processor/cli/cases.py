"""``spanguard cases build|run|plan``: regression cases from production traces."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..regression.vocabulary import SelectMode
from ._cases_plan import plan
from ._cases_run import run
from ._common import BadInput, check_files, output_option, renamed
from ._source import check_source_usage, recorded_traces, source_options

if TYPE_CHECKING:  # the commands' modules load numpy and scipy: imported when a command runs
    from ..regression.mine.build import BuildResult
    from ..regression.mine.loader import Problem
    from ..regression.mine.select import ClusterHealth

__all__ = ["cases"]

#: The build lists at most this many skipped or suspicious input lines.
MAX_LISTED_PROBLEMS = 20

_FILE = click.Path(dir_okay=False, path_type=Path)


@click.group()
def cases() -> None:
    """Mine regression cases from traces (trace2eval-compatible) and run them."""


cases.add_command(plan)
cases.add_command(run)


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
        for line in _problem_lines(exc.problems):
            click.echo(line, err=True)
        raise
    for line in _build_warnings(result):
        click.echo(line, err=True)
    for line in _build_summary(result):
        click.echo(line)
    if strict and result.skipped:
        raise BadInput(
            f"{result.skipped} input line(s) were skipped (see above) and --strict "
            "is set; the case set was written from the rest."
        )


def _problem_lines(problems: Sequence[Problem]) -> list[str]:
    shown = problems[:MAX_LISTED_PROBLEMS]
    lines = [("skipped: " if p.skipped else "warning: ") + p.message for p in shown]
    if len(problems) > len(shown):
        lines.append(f"... and {len(problems) - len(shown)} more problem(s)")
    return lines


def _build_warnings(result: BuildResult) -> list[str]:
    lines = _problem_lines(result.problems)
    if result.duplicate_ids:
        lines.append(
            f"warning: {result.duplicate_ids} row(s) reuse an id seen earlier "
            f"(first: {result.first_duplicate}); each row is kept as its own trace."
        )
    lines += [f"warning: {w}" for w in result.annotation_warnings]
    lines += [f"warning: {o}" for o in result.orphans]
    return lines


def _build_summary(result: BuildResult) -> list[str]:
    lines = [f"read {result.rows} traces from {result.inputs}"]
    if result.skipped:
        lines.append(f"  skipped {result.skipped} unreadable line(s)")
    if result.agent_traces:
        lines.append(f"  {result.agent_traces} of them are agent traces with a process trace")
    if result.custom_matcher:
        lines.append(
            "  custom similarity matcher: the n-gram index is bypassed, "
            "so this run compares against every cluster"
        )
    lines.append(f"generated {len(result.cases)} cases -> {result.cases_path.as_posix()}")
    lines.append(f"  {result.collapsed} collapsed as near-duplicates")
    if result.split_by_process:
        lines.append(
            f"  {result.split_by_process} cluster(s) of near-duplicate questions split by "
            "process or outcome (answer class, tool set, escalation, friction, plan length or "
            "a refusal differ)"
        )
    if result.several_paths or result.agent_traces:
        pooled = (
            f" ({result.templates_pooled} wording variant(s) pooled into their template's, "
            f"{result.variant_cases} with a case of its own)"
            if result.templates_pooled
            else ""
        )
        lines.append(
            f"  paths: {result.paths_found} outcome path(s) (answer class and process) over "
            f"{result.questions} question(s){pooled}; {result.paths_cased} have a case of their "
            "own, "
            f"{result.folded_rows} request(s) of rare or random paths are rates of their "
            f"question's case ({result.rate_properties} rate propert(ies) in all)"
        )
    lines.append(f"  {result.below_min_score} below the minimum score")
    lines.append(f"  {result.beyond_limit} beyond the case limit")
    lines.append(
        f"  coverage: {_share(result.covered_questions, result.distinct_questions)}"
        f", {_share(result.covered_rows, result.rows, 'request(s)')}"
    )
    if result.failing_references:
        lines.append(
            f"  {result.failing_references} trusted reference(s) fail their own checks -- look "
            "at these before committing the set"
        )
    return (
        lines
        + _expectation_lines(result)
        + _health_lines(result.health)
        + [f"report -> {result.report_path.as_posix()}"]
    )


def _share(part: int, whole: int, noun: str = "question(s)") -> str:
    """``3 of 4 question(s) (75%)``."""
    return f"{part} of {whole} {noun}" + (f" ({part / whole:.0%})" if whole else "")


def _expectation_lines(result: BuildResult) -> list[str]:
    lines = []
    annotated, weak, needing = result.annotated, result.weak, result.needing_expectation
    if annotated:
        lines.append(f"  {annotated} case(s) use a human-written expectation")
    if weak:
        lines.append(
            f"  {len(weak)} case(s) carry checks that cannot detect the failure they came "
            "from" + (f" ({annotated} covered by an annotation)" if annotated else "")
        )
    if needing:
        lines.append(
            f"  {len(needing)} of those still need a human-written expectation -> fill in "
            f"{(result.template_path or result.expectations_path).as_posix()}"
        )
    return lines


def _health_lines(health: ClusterHealth) -> list[str]:
    if not health.multi_member_clusters:
        return []
    return [
        f"  clustering: threshold {health.threshold:.2f}",
        f"  clustering: {health.clusters} clusters, {health.multi_member_clusters} with more "
        "than one row",
        f"  clustering: largest cluster holds {health.largest} rows",
        f"  clustering: {health.share_in_clusters:.0%} of the log sits in a cluster with others",
    ]
