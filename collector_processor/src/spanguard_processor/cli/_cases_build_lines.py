"""The console summary of ``spanguard cases build``: what it read, chose and wrote, and the
problems met on the way (the library returns them in a ``BuildResult``; only this prints)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the build's modules load numpy: imported when the command runs
    from ..regression.mine.build import BuildResult
    from ..regression.mine.loader import Problem
    from ..regression.mine.select import ClusterHealth

__all__ = ["build_summary", "build_warnings", "problem_lines"]

#: The build lists at most this many skipped or suspicious input lines.
MAX_LISTED_PROBLEMS = 20


def problem_lines(problems: Sequence[Problem]) -> list[str]:
    shown = problems[:MAX_LISTED_PROBLEMS]
    lines = [("skipped: " if p.skipped else "warning: ") + p.message for p in shown]
    if len(problems) > len(shown):
        lines.append(f"... and {len(problems) - len(shown)} more problem(s)")
    return lines


def build_warnings(result: BuildResult) -> list[str]:
    lines = problem_lines(result.problems)
    if result.duplicate_ids:
        lines.append(
            f"warning: {result.duplicate_ids} row(s) reuse an id seen earlier "
            f"(first: {result.first_duplicate}); each row is kept as its own trace."
        )
    lines += [f"warning: {w}" for w in result.annotation_warnings]
    lines += [f"warning: {o}" for o in result.orphans]
    return lines


def build_summary(result: BuildResult) -> list[str]:
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
