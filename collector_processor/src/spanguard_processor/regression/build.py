"""``cases build``: log(s) in, ``cases.jsonl`` + ``report.md`` (+ expectations template) out."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spanguard.exceptions import ConfigError, InputError

from ..common.jsonio import write_text_atomic
from ..common.references import resolve
from .annotations import load_annotations, render_template
from .casebuild import build_cases
from .loader import DEFAULT_MAX_LINE_BYTES, load_logs
from .report import build_report
from .select import cluster_log, select

__all__ = ["BuildOptions", "BuildOutcome", "build_evalset", "load_matcher"]

MAX_LISTED_PROBLEMS = 20


@dataclass(frozen=True)
class BuildOptions:
    out: Path = Path("evalset")
    max_cases: int = 50
    min_score: float = 1.0
    threshold: float = 0.6
    similarity: str | None = None
    expectations: Path | None = None
    sequential_ids: bool = False
    timing_checks: bool = True
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES

    def validate(self) -> None:
        if self.max_cases < 1:
            raise ConfigError("--max-cases", f"must be at least 1, got {self.max_cases}.")
        if not math.isfinite(self.min_score):
            raise ConfigError("--min-score", f"must be a finite number, got {self.min_score}.")
        if not (math.isfinite(self.threshold) and 0 < self.threshold <= 1):
            raise ConfigError(
                "--dedup-threshold", f"must be a number in (0, 1], got {self.threshold}."
            )
        if self.max_line_bytes < 1:
            raise ConfigError("--max-line-bytes", f"must be positive, got {self.max_line_bytes}.")


@dataclass
class BuildOutcome:
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    skipped: int = 0
    cases: list[dict[str, Any]] = field(default_factory=list)


def load_matcher(spec: str) -> Callable[[str, str], float]:
    if ":" not in spec:  # trace2eval also takes module.function
        module_name, _, attr = spec.rpartition(".")
        spec = f"{module_name}:{attr}" if module_name else spec
    candidate = resolve(spec, "the similarity matcher",
                        error=lambda message: ConfigError("--similarity", message))

    def matcher(left: str, right: str) -> float:
        try:
            value = float(candidate(left, right))
        except Exception as exc:
            raise ConfigError(
                "--similarity",
                f"{spec} failed on ({left!r}, {right!r}): {type(exc).__name__}: {exc}.",
            ) from None
        if not math.isfinite(value):
            raise ConfigError("--similarity", f"{spec} returned {value} for ({left!r}, {right!r}).")
        return value

    return matcher


def _jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def build_evalset(inputs: list[Path], options: BuildOptions) -> BuildOutcome:
    """Run a build; raises InputError when no usable row was found (exit 2)."""
    options.validate()
    matcher = load_matcher(options.similarity) if options.similarity else None
    loaded = load_logs(inputs, options.max_line_bytes)
    outcome = BuildOutcome(skipped=loaded.skipped_count)
    shown = loaded.problems[:MAX_LISTED_PROBLEMS]
    outcome.stderr += [("skipped: " if p.skipped else "warning: ") + p.message for p in shown]
    if len(loaded.problems) > len(shown):
        outcome.stderr.append(f"... and {len(loaded.problems) - len(shown)} more problem(s)")
    names = ", ".join(p.as_posix() for p in inputs)
    if not loaded.rows:
        raise InputError(
            f"no usable traces found in {names} ({loaded.skipped_count} line(s) "
            "skipped; the first reasons are listed above)."
        )
    if loaded.duplicate_ids:
        outcome.stderr.append(
            f"warning: {loaded.duplicate_ids} row(s) reuse an id seen earlier "
            f"(first: {loaded.first_duplicate}); each row is kept as its own trace."
        )
    out = options.out
    expectations_path = options.expectations or out / "expectations.jsonl"
    annotations = load_annotations(expectations_path)
    outcome.stderr += [f"warning: {w}" for w in annotations.warnings]

    selection = select(
        cluster_log(loaded.rows, options.threshold, matcher, options.timing_checks),
        options.max_cases,
        options.min_score,
    )
    built = build_cases(selection, annotations, options.sequential_ids, options.timing_checks)
    cases = [b.case for b in built]
    used = {id(b.annotation) for b in built if b.annotation is not None}
    orphans = [
        f"{expectations_path.as_posix()}:{a.line}: the expectation for {a.input!r} "
        "matches no case in this build."
        for a in annotations.filled
        if id(a) not in used
    ]
    outcome.stderr += [f"warning: {o}" for o in orphans]
    outcome.cases = cases

    write_text_atomic(out / "cases.jsonl", _jsonl(cases))
    write_text_atomic(out / "report.md", build_report(selection, cases, names, orphans))
    weak = [c for c in cases if c["self_check"]["verdict"] == "failure_not_reproduced"]
    annotated = sum(1 for c in cases if c["annotation"]["applied"])
    needing = [c for c in weak if not c["annotation"]["applied"]]
    template = None
    if not annotations.exists and needing:
        template = expectations_path.with_name("expectations.template.jsonl")
        write_text_atomic(template, render_template(needing))

    lines = outcome.stdout
    lines.append(f"read {len(loaded.rows)} traces from {names}")
    if loaded.skipped_count:
        lines.append(f"  skipped {loaded.skipped_count} unreadable line(s)")
    if loaded.agent_traces:
        lines.append(f"  {loaded.agent_traces} of them are agent traces with a process trace")
    if matcher is not None:
        lines.append(
            "  custom similarity matcher: the n-gram index is bypassed, "
            "so this run compares against every cluster"
        )
    lines.append(f"generated {len(cases)} cases -> {(out / 'cases.jsonl').as_posix()}")
    lines.append(f"  {selection.collapsed} collapsed as near-duplicates")
    if selection.split_by_process:
        lines.append(
            f"  {selection.split_by_process} cluster(s) of near-duplicate questions split by "
            "process (tool set, escalation, friction or plan length differ)"
        )
    lines.append(f"  {selection.below_min_score} below the minimum score")
    lines.append(f"  {selection.beyond_limit} beyond the case limit")
    failing = sum(1 for c in cases if c["self_check"]["verdict"] == "reference_fails_own_checks")
    if failing:
        lines.append(
            f"  {failing} trusted reference(s) fail their own checks -- look at these "
            "before committing the set"
        )
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
            f"{(template or expectations_path).as_posix()}"
        )
    health = selection.health
    if health.multi_member_clusters:
        lines += [
            f"  clustering: threshold {health.threshold:.2f}",
            f"  clustering: {health.clusters} clusters, {health.multi_member_clusters} with more "
            "than one row",
            f"  clustering: largest cluster holds {health.largest} rows",
            f"  clustering: {health.share_in_clusters:.0%} of the log sits in a cluster "
            "with others",
        ]
    lines.append(f"report -> {(out / 'report.md').as_posix()}")
    return outcome
