"""``cases build``: log(s) in, ``cases.jsonl`` + ``report.md`` (+ expectations template) out.

:func:`build_evalset` writes the files and returns a :class:`BuildResult`: every figure the
command prints, and the problems and warnings met on the way. Nothing here prints.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from spanguard.exceptions import ConfigError, InputError

from ...common.jsonio import write_text_atomic
from ...common.references import resolve
from ...inputs.evaluation import RecordedTraces
from ..case import Case
from ..vocabulary import SelectMode
from .annotations import load_annotations, render_template
from .casebuild import build_cases
from .loader import DEFAULT_MAX_LINE_BYTES, Problem, load_entries, load_logs
from .report import build_report
from .select import SELECT_MODES, ClusterHealth, cluster_log, select

__all__ = ["BuildOptions", "BuildResult", "NoUsableRows", "build_evalset", "load_matcher"]


@dataclass(frozen=True)
class BuildOptions:
    out: Path = Path("evalset")
    max_cases: int = 50
    min_score: float = 1.0
    dedup_threshold: float = 0.6
    similarity: str | None = None
    expectations: Path | None = None
    sequential_ids: bool = False
    timing_checks: bool = True
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    #: ``coverage``: a case for every question and path; ``signals``: trace2eval's selection.
    select: str = SelectMode.COVERAGE

    def validate(self) -> None:
        """Raise :class:`ConfigError` naming the field (``max_cases``, ``dedup_threshold`` …)."""
        if self.max_cases < 1:
            raise ConfigError("max_cases", f"must be at least 1, got {self.max_cases}.")
        if not math.isfinite(self.min_score):
            raise ConfigError("min_score", f"must be a finite number, got {self.min_score}.")
        if not (math.isfinite(self.dedup_threshold) and 0 < self.dedup_threshold <= 1):
            raise ConfigError(
                "dedup_threshold", f"must be a number in (0, 1], got {self.dedup_threshold}."
            )
        if self.max_line_bytes < 1:
            raise ConfigError("max_line_bytes", f"must be positive, got {self.max_line_bytes}.")
        if self.select not in SELECT_MODES:
            raise ConfigError(
                "select", f"must be one of {', '.join(SELECT_MODES)}, got {self.select!r}."
            )


class NoUsableRows(InputError):
    """No line of the inputs was a usable trace; ``problems`` says why, line by line."""

    def __init__(self, message: str, problems: tuple[Problem, ...]) -> None:
        super().__init__(message)
        self.problems = problems


@dataclass(frozen=True)
class BuildResult:
    """What a build read, chose and wrote."""

    inputs: str  # the input paths, comma-separated
    rows: int  # usable traces read
    agent_traces: int  # of which agent traces with a process trace
    problems: tuple[Problem, ...]  # every line skipped or warned about, in input order
    duplicate_ids: int  # rows reusing an id seen earlier
    first_duplicate: str
    annotation_warnings: tuple[str, ...]  # from the expectations file
    orphans: tuple[str, ...]  # expectations that matched no case
    custom_matcher: bool
    cases: tuple[Case, ...]
    collapsed: int
    split_by_process: int
    below_min_score: int
    beyond_limit: int
    health: ClusterHealth
    cases_path: Path
    report_path: Path
    expectations_path: Path
    template_path: Path | None  # written when no expectations file exists and cases need one
    distinct_questions: int  # clusters, after any split by process (report.md's figure)
    questions_without_signals: int
    select: str = SelectMode.COVERAGE
    covered_rows: int = 0  # requests in a cluster that became a case
    questions: int = 0  # question clusters before they were split into outcome paths
    paths_found: int = 0  # distinct outcome paths (answer class, process) over all questions
    paths_cased: int = 0  # of which the own path of a case
    folded_rows: int = 0  # requests of a rare or random path, a rate of their question's case
    templates_pooled: int = 0  # text clusters pooled into another: wording variants of a template
    variant_cases: int = 0  # of which given a case of their own, on a path that is a case's

    @property
    def rate_properties(self) -> int:
        """Properties that vary in production (rates), over all cases."""
        return sum(len(c.rates) for c in self.cases)

    @property
    def several_paths(self) -> bool:
        """Whether some question took more than one outcome path."""
        return self.paths_found > self.questions

    @property
    def covered_questions(self) -> int:
        return len(self.cases)

    @property
    def skipped(self) -> int:
        return sum(1 for p in self.problems if p.skipped)

    @property
    def weak(self) -> tuple[Case, ...]:
        """Cases whose checks cannot detect the failure they came from."""
        return tuple(c for c in self.cases if c.weak)

    @property
    def annotated(self) -> int:
        return sum(1 for c in self.cases if c.annotation.applied)

    @property
    def needing_expectation(self) -> tuple[Case, ...]:
        return tuple(c for c in self.weak if not c.annotation.applied)

    @property
    def failing_references(self) -> int:
        return sum(1 for c in self.cases if c.reference_fails)

    def to_dict(self) -> dict[str, object]:
        """The build as JSON: trace2eval 0.5.1's ``SelectionResult.stats()`` keys first, in its
        order and with its values (``total_traces`` … ``cases_needing_annotation``), then
        what spanguard adds (inputs, problems, warnings, clustering, the files written)."""
        return {
            "total_traces": self.rows,
            "distinct_questions": self.distinct_questions,
            "questions_without_signals": self.questions_without_signals,
            "cases": len(self.cases),
            "dropped_below_min_score": self.below_min_score,
            "dropped_as_duplicate": self.collapsed,
            "dropped_beyond_limit": self.beyond_limit,
            "cases_with_weak_checks": len(self.weak),
            "cases_whose_reference_fails": self.failing_references,
            "cases_with_annotation": self.annotated,
            "cases_needing_annotation": len(self.needing_expectation),
            "inputs": self.inputs,
            "agent_traces": self.agent_traces,
            "skipped_lines": self.skipped,
            "problems": [{"message": p.message, "skipped": p.skipped} for p in self.problems],
            "duplicate_ids": self.duplicate_ids,
            "first_duplicate": self.first_duplicate or None,
            "annotation_warnings": list(self.annotation_warnings),
            "orphan_expectations": list(self.orphans),
            "custom_matcher": self.custom_matcher,
            "split_by_process": self.split_by_process,
            "paths": {
                "found": self.paths_found,
                "cased": self.paths_cased,
                "folded_requests": self.folded_rows,
                "rate_properties": self.rate_properties,
            },
            "select": self.select,
            "coverage": {
                "questions": self.covered_questions,
                "of_questions": self.distinct_questions,
                "requests": self.covered_rows,
                "of_requests": self.rows,
            },
            "clustering": asdict(self.health),
            "case_ids": [c.id for c in self.cases],
            "files": {
                "cases": self.cases_path.as_posix(),
                "report": self.report_path.as_posix(),
                "expectations": self.expectations_path.as_posix(),
                "template": self.template_path.as_posix() if self.template_path else None,
            },
        }


def load_matcher(spec: str) -> Callable[[str, str], float]:
    """The ``module:function`` (or ``module.function``) similarity matcher; a failure is a
    :class:`ConfigError` for ``similarity``."""
    if ":" not in spec:  # trace2eval also takes module.function
        module_name, _, attr = spec.rpartition(".")
        spec = f"{module_name}:{attr}" if module_name else spec
    candidate = resolve(
        spec, "the similarity matcher", error=lambda message: ConfigError("similarity", message)
    )

    def matcher(left: str, right: str) -> float:
        try:
            value = float(candidate(left, right))
        except Exception as exc:
            raise ConfigError(
                "similarity",
                f"{spec} failed on ({left!r}, {right!r}): {type(exc).__name__}: {exc}.",
            ) from None
        if not math.isfinite(value):
            raise ConfigError("similarity", f"{spec} returned {value} for ({left!r}, {right!r}).")
        return value

    return matcher


def _jsonl(cases: tuple[Case, ...]) -> str:
    return "".join(json.dumps(c.to_dict(), ensure_ascii=False) + "\n" for c in cases)


def build_evalset(inputs: list[Path] | RecordedTraces, options: BuildOptions) -> BuildResult:
    """Build and write the case set from files, or from agent traces read through an engine;
    raises :class:`NoUsableRows` (an InputError) when no usable row was found, and
    :class:`ConfigError` for a bad option."""
    options.validate()
    matcher = load_matcher(options.similarity) if options.similarity else None
    if isinstance(inputs, RecordedTraces):
        loaded, names = load_entries(inputs.entries()), inputs.name
    else:
        loaded = load_logs(inputs, options.max_line_bytes)
        names = ", ".join(p.as_posix() for p in inputs)
    if not loaded.rows:
        raise NoUsableRows(
            f"no usable traces found in {names} ({loaded.skipped_count} line(s) "
            "skipped; the first reasons are listed above).",
            tuple(loaded.problems),
        )
    out = options.out
    expectations_path = options.expectations or out / "expectations.jsonl"
    annotations = load_annotations(expectations_path)
    selection = select(
        cluster_log(loaded.rows, options.dedup_threshold, matcher, options.timing_checks),
        options.max_cases,
        options.min_score,
        options.select,
    )
    built = build_cases(selection, annotations, options.sequential_ids, options.timing_checks)
    cases = tuple(b.case for b in built)
    used = {id(b.annotation) for b in built if b.annotation is not None}
    orphans = tuple(
        f"{expectations_path.as_posix()}:{a.line}: the expectation for {a.input!r} "
        "matches no case in this build."
        for a in annotations.filled
        if id(a) not in used
    )
    write_text_atomic(out / "cases.jsonl", _jsonl(cases))
    write_text_atomic(out / "report.md", build_report(selection, cases, names, list(orphans)))
    needing = [c for c in cases if c.weak and not c.annotation.applied]
    template = None
    if not annotations.exists and needing:
        template = expectations_path.with_name("expectations.template.jsonl")
        write_text_atomic(template, render_template(needing))
    return BuildResult(
        names,
        len(loaded.rows),
        loaded.agent_traces,
        tuple(loaded.problems),
        loaded.duplicate_ids,
        loaded.first_duplicate,
        tuple(annotations.warnings),
        orphans,
        matcher is not None,
        cases,
        selection.collapsed,
        selection.split_by_process,
        selection.below_min_score,
        selection.beyond_limit,
        selection.health,
        out / "cases.jsonl",
        out / "report.md",
        expectations_path,
        template,
        len(selection.clusters),
        selection.no_signal,
        options.select,
        selection.covered_rows,
        selection.questions,
        selection.paths_found,
        selection.paths_cased,
        selection.folded_rows,
        selection.templates_pooled,
        selection.variant_cases,
    )
