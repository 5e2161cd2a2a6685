"""``report.md`` for a build: trace2eval 0.5.1's sections, with computed clustering figures."""

from __future__ import annotations

from collections.abc import Sequence

from ...common.markdown import md_inert
from ..case import Case, Property
from ..checks import PROCESS_CHECK_TYPES, CheckKind
from ..text_checks import as_list
from ..vocabulary import FailureKind
from .paths import MIN_PATH_ROWS, describe_path, path_key
from .select import ClusterHealth, Selection

__all__ = ["build_report", "cell", "number"]


def cell(value: object, limit: int = 60) -> str:
    text = str(value).replace("\n", " ").strip()
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return md_inert(text) or "—"  # app text inert (no link, image or HTML), else as trace2eval


def number(value: object, digits: int = 4) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) < 0.001:
            return f"{value:.8f}".rstrip("0")
        return f"{value:.{digits}f}"
    return str(value)


def _share(part: int, whole: int) -> str:
    return f"{part} of {whole} ({part / whole:.1%})" if whole else f"{part} of {whole}"


def _summary(sel: Selection, cases: Sequence[Case]) -> list[str]:
    weak = [c for c in cases if c.weak]
    failing = [c for c in cases if c.reference_fails]
    annotated = [c for c in cases if c.annotation.applied]
    needing = [c for c in weak if not c.annotation.applied]
    split = (
        [f"| Questions split into several cases by process | {sel.split_by_process} |"]
        if sel.split_by_process
        else []
    )
    return [
        "## Summary",
        "",
        "| Metric | Value |",
        "| --- | --- |",
        f"| Traces read | {len(sel.rows)} |",
        f"| Distinct questions | {len(sel.clusters)} |",
        *split,
        f"| Questions with no signal | {sel.no_signal} |",
        f"| Cases generated | {len(cases)} |",
        f"| Questions covered by a case | {_share(len(sel.chosen), len(sel.clusters))} |",
        f"| Requests covered by a case | {_share(sel.covered_rows, len(sel.rows))} |",
        f"| Log lines collapsed into a case | {sel.collapsed} |",
        f"| Questions below the minimum score | {sel.below_min_score} |",
        f"| Questions beyond the case limit | {sel.beyond_limit} |",
        f"| Cases whose checks cannot catch their own failure | {len(weak)} |",
        f"| Trusted references failing their own checks | {len(failing)} |",
        f"| Cases using a human-written expectation | {len(annotated)} |",
        f"| Cases still needing one | {len(needing)} |",
        "",
    ]


def _clustering(health: ClusterHealth) -> list[str]:
    return [
        "## How the clustering behaved",
        "",
        "Inputs that fold to the same text always share a cluster. Other phrasings join the "
        "first cluster whose *representative* they match (character-bigram Jaccard at or above "
        "the threshold, at least two shared bigrams), so a cluster cannot drift away from its "
        "own question through a chain of links. Lines of 40 or more characters that recur in "
        "several inputs (retrieved context, system prompts) are left out of the comparison.",
        "",
        "| Statistic | Value |",
        "| --- | --- |",
        f"| Threshold | {health.threshold:.2f} |",
        f"| Clusters | {health.clusters} |",
        f"| Multi-member clusters | {health.multi_member_clusters} |",
        f"| Largest cluster | {health.largest} rows |",
        f"| Rows pulled into a cluster | {health.share_in_clusters:.1%} |",
        f"| Phrasings below the threshold against their representative | "
        f"{health.below_threshold} of {health.compared} compared |",
        f"| Worst representative similarity seen | {health.worst_similarity:.3f} |",
        "",
    ]


def _cases_table(cases: Sequence[Case]) -> list[str]:
    lines = [
        "## Cases",
        "",
        "| Case | Score | In log | Trusted | Shape from | Self-check | Signals | Input |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for case in cases:
        signals = ", ".join(s.name for s in case.signals)
        lines.append(
            f"| {cell(case.id, 12)} | {cell(case.score, 8)} | "
            f"{cell(case.occurrences_in_log, 8)} | "
            f"{'yes' if case.reference_is_trusted else 'no'} | "
            f"{cell(case.shape_source, 30)} | {cell(case.self_check.verdict, 30)} | "
            f"{cell(signals, 42)} | {cell(case.input, 40)} |"
        )
    lines.append("")
    return lines


def _human_eye(cases: Sequence[Case]) -> list[str]:
    failing = [c for c in cases if c.reference_fails]
    needing = [c for c in cases if c.weak and not c.annotation.applied]
    if not failing and not needing:
        return []
    lines = [
        "## Cases that need a human eye",
        "",
        "Generated cases are a proposal. These are the ones where the proposal is weakest, "
        "in order of how much they should worry you.",
        "",
    ]
    for case in failing:
        lines.append(
            f"- **{case.id}** — a trusted reference does not satisfy its own checks "
            f"(`{', '.join(case.self_check.failed_checks)}`). Either the reference "
            f"is wrong or the checks are."
        )
    for case in needing:
        names = ", ".join(s.name for s in case.signals)
        if case.failure_kind == FailureKind.BEHAVIOUR:
            lines.append(
                f"- {case.id} — the failure here was behavioural (`{names}`): the call "
                f"itself produced a perfectly acceptable answer, and what went wrong "
                f"happened around it. No check on the output text can reproduce that."
            )
        else:
            lines.append(
                f"- {case.id} — the failure was visible in the output (`{names}`), yet "
                f"the generated checks pass on it. That is a gap in the checks, not a "
                f"limit of the approach -- worth investigating."
            )
    lines += [
        "",
        "The way out for the behavioural ones is an expectation file: one JSON object "
        "per line, keyed on `input`, holding the checks a correct answer should satisfy. "
        "`build` writes a fill-in template next to the case set listing exactly these cases; "
        "save it as `expectations.jsonl` and rebuild. It is keyed on the question rather "
        "than the case id, so it survives regeneration.",
        "",
    ]
    return lines


def _top_case(top: Case) -> list[str]:
    lines = ["## Why the top case was chosen", "", f"`{top.id}` scored **{top.score}**.", ""]
    for s in top.signals:
        lines.append(f"- `{s.name}` (+{s.weight}) — {s.detail}")
    lines += ["", f"The expected shape came from {top.shape_source}.", ""]
    check = top.self_check
    if top.reference_is_trusted:
        lines.append(
            "Self-check: this is a trusted reference, and it "
            + ("satisfies its own checks." if check.passed else "does NOT satisfy them.")
        )
    elif not check.passed:
        lines.append(
            "Self-check: this is a failure seed, so the checks are *supposed* to fail on "
            f"it — they do, on `{', '.join(check.failed_checks)}`. The case "
            "reproduces the failure it came from."
        )
    else:
        lines.append(
            "Self-check: this is a failure seed, so the checks are *supposed* to fail on "
            "it — they do not. The case cannot detect the failure it came from, which is "
            "why it appears in the list above."
        )
    lines.append("")
    lines += [f"> {note}" for note in top.notes]
    lines.append("")
    return lines


def _process(cases: Sequence[Case]) -> list[str]:
    rows = []
    for case in cases:
        kinds = [c.type for c in case.trace_checks if c.type in PROCESS_CHECK_TYPES]
        if kinds:
            rows.append(
                f"| {cell(case.id, 18)} | {cell(', '.join(kinds), 80)} | {cell(case.input, 40)} |"
            )
    if not rows:
        return []
    return [
        "## Process expectations",
        "",
        "Learned from the clean agent traces of the same question and checked when "
        "`spanguard cases run` is given the run's agent traces; trace2eval ignores them.",
        "",
        "| Case | Checks on the process | Input |",
        "| --- | --- | --- |",
        *rows,
        "",
    ]


def _property(prop: Property) -> str:
    """A property as the share where its event happened: ``escalated 1/24``, ``tool retries
    1/24``, ``calls verify_income 10/24``, ``answer approve 23/24`` …"""
    check, held, of = prop.check, prop.held, prop.of
    value = check.value
    if check.type == CheckKind.ESCALATED:
        return f"escalated {held if value else of - held}/{of}"
    if check.type == CheckKind.MAX_TOOL_RETRIES:
        return f"tool retries {of - held}/{of}"
    if check.type in (CheckKind.MAX_FRICTION_POINTS, CheckKind.MAX_PLAN_STEPS):
        noun = "friction points" if check.type == CheckKind.MAX_FRICTION_POINTS else "plan steps"
        return f"more than {value} {noun} {of - held}/{of}"
    if check.type == CheckKind.TOOLS_INCLUDE:
        return f"calls {'+'.join(str(v) for v in as_list(value))} {held}/{of}"
    if check.type == CheckKind.TOOL_SEQUENCE:
        return f"sequence {'→'.join(str(v) for v in as_list(value))} {held}/{of}"
    if check.type == CheckKind.ANSWER_CLASS:
        return f"answer {value} {held}/{of}"
    shown = "" if value is None else f" {value}"
    return f"{check.type}{shown} {held}/{of}"


def _paths(sel: Selection, cases: Sequence[Case]) -> list[str]:
    if not any(c.properties for c in cases) and sel.paths_found <= sel.questions:
        return []
    lines = [
        "## Outcome paths, stable properties and rates",
        "",
        f"The {sel.questions} question(s) took {sel.paths_found} outcome path(s) (class of the "
        f"answer, then process); {sel.paths_cased} have a case of their own. A path becomes a "
        f"case when it occurred at least {MIN_PATH_ROWS} times and the input explains it (one "
        "slot value, ratio of two, or word holds its requests in one unbroken run); "
        f"{sel.folded_rows} request(s) of rare or random paths were folded into their "
        "question's case, where they are rates. A stable property held in every clean request "
        "of the case's cluster, and in enough of them to have shown the rate at which the log "
        "shows that behaviour varying (if it does), and is asserted; a rate is compared "
        "between versions, never asserted.",
        "",
        "| Case | Path | Requests | Stable | Rates (baseline) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for case, cluster in zip(cases, sel.chosen, strict=True):
        stable = ", ".join(dict.fromkeys(p.check.type for p in case.properties if p.stable))
        rates = "; ".join(f"{_property(p)} (rate)" for p in case.rates)
        path = describe_path(path_key(sel.rows[cluster.representative]))
        lines.append(
            f"| {cell(case.id, 18)} | {cell(path, 80)} | {case.occurrences_in_log} | "
            f"{cell(stable, 120)} | {cell(rates, 200)} |"
        )
    return [*lines, ""]


def build_report(
    sel: Selection, cases: Sequence[Case], source_name: str, orphans: list[str]
) -> str:
    ctx = sel.context
    seeds = sum(1 for c in cases if not c.reference_is_trusted)
    lines = ["# trace2eval build report", "", f"Source log: `{source_name}`", ""]
    lines += _summary(sel, cases)
    if sel.health.multi_member_clusters:
        lines += _clustering(sel.health)
    lines += [
        "## Log-wide baselines",
        "",
        "| Statistic | Value |",
        "| --- | --- |",
        f"| p95 latency | {number(ctx.p95_latency_ms, 2)} ms |",
        f"| p95 cost | ${number(ctx.p95_cost_usd, 8)} |",
        f"| Median output length | {number(ctx.median_chars, 1)} chars |",
        "",
        "## Case mix",
        "",
        f"- **{seeds}** regression seeds (the reference output is the output that went "
        f"wrong — the case exists so it never ships twice)",
        f"- **{len(cases) - seeds}** quality anchors (clean trace, so an expected shape was "
        f"inferred from it)",
        "",
    ]
    lines += _cases_table(cases)
    lines += _human_eye(cases)
    annotated = [c for c in cases if c.annotation.applied]
    if annotated:
        lines += [
            "## Cases carrying a human-written expectation",
            "",
            "The expectation below does not make these cases reproduce their original "
            "failure -- nothing can, the failure was never in the answer. What it does is "
            "give them something worth asserting.",
            "",
        ]
        lines += [f"- `{c.id}` ({c.input}) — {c.annotation.note or '(no note)'}" for c in annotated]
        lines.append("")
    if orphans:
        lines += ["## Expectations that matched no case", ""]
        lines += [f"- {orphan}" for orphan in orphans]
        lines.append("")
    lines += _process(cases)
    lines += _paths(sel, cases)
    if cases:
        lines += _top_case(cases[0])
    lines += [
        "---",
        "",
        "Generated by spanguard (trace2eval-compatible). Review this file before "
        "committing the case set — the selection is a proposal, not a verdict.",
        "",
    ]
    return "\n".join(lines)
