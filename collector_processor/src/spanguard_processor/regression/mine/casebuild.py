"""Turning a chosen cluster into a trace2eval-compatible case (docs/regression.md).

Key order, field rules, shape inference, notes and self-check follow trace2eval 0.5.1. The
differences are deliberate fixes, each listed in ``docs/regression.md``: ids derived from the
question, duplicates keyed by row, a ``max_chars`` bound for rambling answers, and
``trace_checks`` (process, latency and cost expectations) that only spanguard evaluates.
"""

from __future__ import annotations

import hashlib
import math
import statistics
from dataclasses import dataclass

from ...common._json import parse_json
from ..case import (
    FAILURE_NOT_REPRODUCED,
    REFERENCE_FAILS_OWN_CHECKS,
    Adjustment,
    Case,
    CaseAnnotation,
    Check,
    Evidence,
    Property,
    SelfCheck,
)
from ..checks import (
    CheckFamily,
    CheckKind,
    check_types,
    run_text_checks,
    run_trace_check,
    timing_limit,
)
from ..textnorm import fold
from ..vocabulary import FailureKind, SelfCheckVerdict, SignalName
from .annotations import Annotation, AnnotationSet, merge_checks
from .consistency import make_consistent
from .expect import checks_from_expect
from .properties import (
    assertion_properties,
    baseline_figures,
    learn_properties,
    log_miss_rates,
    settle_stability,
    variation,
)
from .select import SEED_SIGNALS, Cluster, Selection
from .signals import short_boundary

__all__ = ["MAX_LISTED_DUPLICATES", "BuiltCase", "build_cases", "stable_case_id"]

#: ``duplicate_trace_ids`` lists at most this many ids; ``duplicate_count`` stays exact.
MAX_LISTED_DUPLICATES = 1000
_SHAPE = frozenset(
    {
        SignalName.EMPTY_OUTPUT,
        SignalName.FALLBACK_PHRASE,
        SignalName.EXPECTED_SHAPE_VIOLATED,
        SignalName.OUTPUT_MUCH_SHORTER,
        SignalName.OUTPUT_MUCH_LONGER,
    }
)
_BEHAVIOUR = frozenset(
    {
        SignalName.NEGATIVE_FEEDBACK,
        SignalName.USER_RETRIED,
        SignalName.SLOW_RESPONSE,
        SignalName.EXPENSIVE_CALL,
    }
)
_SEEDS = SEED_SIGNALS
_LONG_RATIO = 3.0
TIMING_KINDS = frozenset(ct.name for ct in check_types(CheckFamily.TIMING))


def stable_case_id(text: str, taken: set[str]) -> str:
    """``case-`` + 12 hex digits of SHA-256 over the folded question (longer on a clash)."""
    digest = hashlib.sha256((fold(text) or text.strip()).encode("utf-8")).hexdigest()
    size = 12
    while f"case-{digest[:size]}" in taken and size < len(digest):
        size += 4
    return f"case-{digest[:size]}"


@dataclass(frozen=True, slots=True)
class BuiltCase:
    case: Case
    annotation: Annotation | None


def _failure_kind(names: set[str]) -> FailureKind:
    shape, behaviour = names & _SHAPE, names & _BEHAVIOUR
    if shape and behaviour:
        return FailureKind.SHAPE_AND_BEHAVIOUR
    if shape:
        return FailureKind.SHAPE
    return FailureKind.BEHAVIOUR if behaviour else FailureKind.NONE


def _agreed_json_keys(outputs: list[str]) -> list[str]:
    schemas: list[set[str]] = []
    for output in outputs:
        stripped = output.strip()
        if not stripped.startswith("{"):
            return []
        try:
            payload = parse_json(stripped)
        except ValueError:
            return []
        if not isinstance(payload, dict):
            return []
        schemas.append(set(payload))
    return sorted(set.intersection(*schemas)) if schemas else []


def _infer(
    is_seed: bool,
    references: list[str],
    notes: list[str],
    floor: int | None,
) -> list[Check]:
    checks = [Check.of(CheckKind.NOT_FALLBACK)]
    usable = [o for o in references if o.strip()]
    if not usable:
        if is_seed and floor is not None:
            checks.append(Check.of(CheckKind.MIN_CHARS, value=floor))
            notes.append(
                "failure seed with no clean sibling, but the failure itself was a length failure: "
                "the response fell below the log's short-answer line, so this case asserts "
                f"min_chars={floor}. That is a weak reference -- it comes from the log-wide median "
                "rather than from this question's own answers, so check it first when tuning"
            )
        elif is_seed:
            checks.append(Check.of(CheckKind.MIN_CHARS, value=1))
            notes.append(
                "failure seed with no clean sibling: no answer to this question in the log was "
                "usable as a shape reference, so all this case asserts is that the answer is not "
                "empty and does not fall back"
            )
        else:
            notes.append("no shape inferred: the reference answer is empty")
        return checks
    median = int(statistics.median([len(o.strip()) for o in usable]))
    minimum = max(8, int(median * 0.4))
    checks.append(Check.of(CheckKind.MIN_CHARS, value=minimum))
    source = "clean answer" if len(usable) == 1 else f"{len(usable)} clean answers"
    if is_seed:
        notes.append(
            f"failure seed: the failing output is not a shape reference, so "
            f"min_chars={minimum} was inferred from {source} to the same question "
            f"(median {median} chars)"
        )
    else:
        notes.append(
            f"clean trace: min_chars={minimum} from {source} to this question "
            f"(median {median} chars); catches truncation, tolerates rewording"
        )
    keys = _agreed_json_keys(usable)
    if keys:
        checks.append(Check.of(CheckKind.JSON, required=keys))
        notes.append(f"clean answers agree on a JSON shape with keys {keys}")
    elif len(usable) > 1 and all(o.strip().startswith("{") for o in usable):
        notes.append("clean answers are all JSON but disagree on keys, so no JSON check was added")
    return checks


def _source(usable: int, floor: int | None) -> str:
    if usable > 1:
        return f"{usable} clean answers to the same question"
    if usable == 1:
        return "the one clean answer to this question"
    if floor is not None:
        return "the log's short-answer line (weak reference)"
    return "none available -- only behaviour was asserted"


class _Builder:
    def __init__(
        self, selection: Selection, annotations: AnnotationSet | None, timing: bool = True
    ) -> None:
        self.sel = selection
        self.annotations = annotations
        self.timing = timing
        #: each cluster's learned properties (by representative row), and the log's miss rates
        self.learned: dict[int, list[Property]] = {}
        self.rates: dict[str, tuple[int, int]] = {}

    def pool(self, cluster: Cluster) -> tuple[list[int], bool, list[int]]:
        """A cluster's members, whether it is a failure seed, and the rows it learns from:
        its own clean traffic, or a failure seed's whole question (its failure may be the very
        process that set it apart: an escalation its clean siblings never made)."""
        members = self.sel.members(cluster)
        names = {s.name for s in self.sel.signals[members[0]]}
        is_seed = bool(names & _SEEDS)
        if not is_seed:
            return members, is_seed, members
        family = [m for m in self.sel.family(cluster) if m != members[0]]
        return members, is_seed, [members[0], *family]

    def learn(self, clusters: list[Cluster]) -> None:
        """Every cluster's properties, then the log's miss rates over the clusters that are
        not failure seeds (a seed learns from its question's traffic, counted already)."""
        varied = []
        for cluster in clusters:
            _, is_seed, pool = self.pool(cluster)
            runs = self.clean_runs(pool, is_seed)
            self.learned[cluster.representative] = learn_properties(runs)
            if not is_seed:
                varied.append(variation(runs))
        self.rates = log_miss_rates(varied)

    def clean(self, row: int) -> bool:
        names = {s.name for s in self.sel.signals[row]}
        return self.sel.rows[row].chars > 0 and not (names & _SEEDS)

    def clean_runs(self, members: list[int], is_seed: bool) -> list[Evidence]:
        """The clean runs of a cluster (a clean representative alone when no member is clean),
        the traffic its checks must pass on."""
        chosen = [m for m in members if self.clean(m)]
        if not chosen and not is_seed:
            chosen = [members[0]]
        return [self.sel.rows[m].evidence for m in chosen]

    def trace_checks(
        self, cluster: Cluster, runs: list[Evidence], names: set[str], adjusted: list[Adjustment]
    ) -> tuple[list[Check], list[Property]]:
        """The assertions on the process (the stable properties of ``runs``, the cluster's
        clean traffic) and timing, and every learned process property (stable or rate)."""
        learned = self.learned.get(cluster.representative)
        if learned is None:
            learned = learn_properties(runs)
        learned = settle_stability(learned, self.rates)
        checks = [p.check for p in learned if p.stable]
        if not self.timing:
            return checks, learned
        for ct in check_types(CheckFamily.TIMING):
            if ct.signal in names:
                limit = timing_limit(ct, runs)
                if isinstance(limit, Check):
                    checks.append(limit)
                else:
                    adjusted.append(limit)
        return checks, learned

    @staticmethod
    def properties(
        checks: list[Check],
        trace_checks: list[Check],
        learned: list[Property],
        runs: list[Evidence],
    ) -> tuple[Property, ...]:
        """Every property of the case in the order it checks them: its text assertions, its
        process properties (stable ones are its process assertions), its timing assertions."""
        if not learned:
            return ()
        timing = [c for c in trace_checks if c.type in TIMING_KINDS]
        process = [p for p in learned if not p.stable or p.check in trace_checks]
        return tuple(
            assertion_properties(checks, runs) + process + assertion_properties(timing, runs)
        )

    def build(self, cluster: Cluster, case_id: str) -> BuiltCase:
        sel, rows = self.sel, self.sel.rows
        members, is_seed, pool = self.pool(cluster)
        rep = rows[members[0]]
        signals = sel.signals[members[0]]
        names = {s.name for s in signals}
        floor = None
        if is_seed and SignalName.OUTPUT_MUCH_SHORTER in names:
            floor = short_boundary(sel.context.median_chars)
        notes: list[str] = []
        if rep.expect:
            checks = checks_from_expect(rep.expect)
            notes.append("checks inherited from the trace's own expect block")
            if not any(c.type == CheckKind.NOT_FALLBACK for c in checks):
                checks.insert(0, Check.of(CheckKind.NOT_FALLBACK))
            shape_source = "the trace's own expect block"
        else:
            references = [rows[m].output for m in pool if self.clean(m)]
            if not references and not is_seed:
                references = [rep.output]
            checks = _infer(is_seed, references, notes, floor)
            shape_source = _source(sum(1 for o in references if o.strip()), floor)
            if SignalName.OUTPUT_MUCH_LONGER in names and sel.context.median_chars > 0:
                bound = math.floor(sel.context.median_chars * _LONG_RATIO)
                checks.append(Check.of(CheckKind.MAX_CHARS, value=bound))
                notes.append(
                    f"the answer rambled past the log's long-answer line, so this case "
                    f"asserts max_chars={bound} (3x the log median)"
                )
        adjusted: list[Adjustment] = []
        runs = self.clean_runs(pool, is_seed)
        trace_checks, learned = self.trace_checks(cluster, runs, names, adjusted)
        checks, trace_checks, changes = make_consistent(checks, trace_checks, runs)
        adjusted += changes
        annotation = self.lookup(rep.input, members)
        if annotation is not None:
            checks = merge_checks(checks, annotation.checks)
            shape_source = "a human-written expectation"
            notes.append(
                "human expectation applied, overriding anything inferred — "
                + (annotation.note or "(no note given)")
            )
        if cluster.size > 1:
            notes.append(
                f"this question appeared {cluster.size} times in the log; addressed once, here"
            )
        self_check = self.self_check(checks, trace_checks, members[0], is_seed)
        if self_check.verdict == FAILURE_NOT_REPRODUCED:
            notes.append(
                "self-check: these checks pass on the very output that went wrong, so a "
                "differently-wrong answer would also pass"
            )
        elif self_check.verdict == REFERENCE_FAILS_OWN_CHECKS:
            notes.append(
                "self-check: a trusted reference does not satisfy its own checks -- "
                "either the reference is wrong or the checks are"
            )
        case = Case(
            id=case_id,
            input=rep.input,
            checks=tuple(checks),
            reference_output=rep.output,
            reference_is_trusted=not is_seed,
            shape_source=shape_source,
            failure_kind=_failure_kind(names),
            annotation=CaseAnnotation(
                annotation is not None, annotation.note if annotation is not None else ""
            ),
            source_trace_id=rep.id,
            score=sel.scores[members[0]],
            signals=tuple(signals),
            occurrences_in_log=cluster.size,
            duplicate_count=cluster.size - 1,
            duplicate_trace_ids=tuple(rows[m].id for m in members[1 : MAX_LISTED_DUPLICATES + 1]),
            self_check=self_check,
            notes=tuple(notes),
            trace_checks=tuple(trace_checks),
            adjusted_checks=tuple(adjusted),
            properties=self.properties(checks, trace_checks, learned, runs),
            baseline=baseline_figures(runs) if learned else None,
            # a failure seed is a case for the request that went wrong, not for its template
            match=None if is_seed else cluster.match,
        )
        return BuiltCase(case, annotation)

    def lookup(self, text: str, members: list[int]) -> Annotation | None:
        if self.annotations is None or not self.annotations.filled:
            return None
        keys = list(dict.fromkeys([fold(text)] + [fold(self.sel.rows[m].input) for m in members]))
        return self.annotations.lookup(keys)

    def self_check(
        self,
        checks: list[Check],
        trace_checks: list[Check],
        row: int,
        is_seed: bool,
    ) -> SelfCheck:
        rep = self.sel.rows[row]
        failed = [r.type for r in run_text_checks(checks, rep.output) if not r.passed]
        if is_seed and not failed and rep.process is not None:
            run = rep.evidence
            failed = [c.type for c in trace_checks if run_trace_check(c, run).passed is False]
        if is_seed:
            verdict = SelfCheckVerdict.OK if failed else FAILURE_NOT_REPRODUCED
        else:
            verdict = REFERENCE_FAILS_OWN_CHECKS if failed else SelfCheckVerdict.OK
        return SelfCheck(not failed, tuple(failed), verdict)


def build_cases(
    selection: Selection,
    annotations: AnnotationSet | None,
    sequential_ids: bool = False,
    timing_checks: bool = True,
) -> list[BuiltCase]:
    builder = _Builder(selection, annotations, timing_checks)
    builder.learn(list(selection.chosen))
    taken: set[str] = set()
    built: list[BuiltCase] = []
    for number, cluster in enumerate(selection.chosen, 1):
        rep = selection.rows[cluster.representative]
        case_id = f"case-{number:03d}" if sequential_ids else stable_case_id(rep.input, taken)
        taken.add(case_id)
        built.append(builder.build(cluster, case_id))
    return built
