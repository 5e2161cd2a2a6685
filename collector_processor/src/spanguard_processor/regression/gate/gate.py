"""``check``: is the current run a regression against the baseline run?

The rules (:data:`RULES`, one :class:`Rule` each), in the order they are listed by ``check``:

* **Aggregate rates** (trace2eval 0.5.1's tolerances, each × ``--tolerance-scale``):
  ``pass_rate``, ``format_compliance_rate`` and ``trace_compliance_rate`` may drop by 0.02,
  ``fallback_rate`` may rise by 0.02. A change beyond the tolerance is a regression only when
  it is also beyond run-to-run noise: McNemar's exact one-sided test on the cases whose outcome
  changed (p < 0.05). Otherwise it is reported as "within noise".
* **p95 latency and mean cost** may rise by 20 % of the baseline; a rise beyond that is a
  regression only when a two-sample case bootstrap puts the rise's one-sided 95 % lower bound
  above zero (and, for latency, the rise is at least ``min_latency_change_ms``). Without
  per-case figures (a trace2eval file) the tolerance alone decides.
* **Cases without output**: a case that had a record in the baseline and has none now fails
  the gate (trace2eval files name them in their ``failures``), unless ``allow_missing``. A
  missing case is not a pass; a case missing from both runs was never compared and is listed,
  not gated.
* **A case that passed on the baseline and now fails a content or process check** fails the
  gate (``case_outcomes``): checks are deterministic functions of the output and the process,
  so such a flip is a change in behaviour. A flip explained by timing or cost limits alone
  (the timing checks) is listed but left to the aggregate timing rules.

Inputs that cannot be compared are bad input (:class:`~spanguard.exceptions.InputError`, exit
2): a baseline without a single matched output ("nothing to compare"), and runs over different
case sets unless ``allow_different_cases``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from spanguard.exceptions import ConfigError, InputError

from ..vocabulary import FailureReason, Outcome
from .noise import ALPHA, bootstrap_increase_bound, mcnemar_worse_p
from .rules import RULES, TIMING_CHECKS, Rule
from .runfile import RunFile

__all__ = [
    "DEFAULT_MIN_LATENCY_CHANGE_MS",
    "Comparison",
    "GateOptions",
    "Violation",
    "check_comparable",
    "compare",
]

#: A p95 latency rise smaller than this is never a regression: below it, the scheduling noise
#: of the machine running the agent dominates (the demo's requests take about a millisecond).
DEFAULT_MIN_LATENCY_CHANGE_MS = 10.0


@dataclass(frozen=True, slots=True)
class Violation:
    metric: str
    baseline: float | None
    current: float | None
    rule: str


@dataclass(frozen=True)
class GateOptions:
    tolerance_scale: float = 1.0
    allow_different_cases: bool = False
    min_latency_change_ms: float = DEFAULT_MIN_LATENCY_CHANGE_MS
    allow_missing: bool = False

    def validate(self) -> None:
        if not math.isfinite(self.tolerance_scale) or self.tolerance_scale < 0:
            raise ConfigError(
                "tolerance_scale", f"must be a finite number ≥ 0, got {self.tolerance_scale}."
            )
        if not math.isfinite(self.min_latency_change_ms) or self.min_latency_change_ms < 0:
            raise ConfigError(
                "min_latency_change_ms",
                f"must be a finite number ≥ 0, got {self.min_latency_change_ms}.",
            )


@dataclass(frozen=True)
class Comparison:
    """The verdict's evidence. ``violations`` empty means PASS."""

    violations: list[Violation]
    pass_to_fail: list[str]
    missing_cases: list[str]  # baseline case ids absent from the current run
    fail_to_pass: list[str]
    within_noise: list[str] = field(default_factory=list)
    added_cases: list[str] = field(default_factory=list)
    no_output: list[str] = field(default_factory=list)  # current cases without an output
    #: Current cases without an output that had one in the baseline (gated unless allowed).
    lost_record: list[str] = field(default_factory=list)
    #: Cases that passed and now fail a content or process check (gated).
    behavioural: list[str] = field(default_factory=list)
    allow_missing: bool = False

    @property
    def regressed_cases(self) -> list[str]:
        """The cases the gate fails on: pass → fail on behaviour, and lost records."""
        lost = [] if self.allow_missing else self.lost_record
        return list(dict.fromkeys([*self.behavioural, *lost]))


def _ids(run: RunFile) -> list[str] | None:
    return list(run.case_results) if run.case_results is not None else None


def check_comparable(baseline: RunFile, current: RunFile, allow: bool) -> None:
    """Raise InputError when the two runs cannot be compared (no matched case, or different
    case sets unless ``allow``)."""
    base, cur = baseline.metrics, current.metrics
    if base.total == 0:
        raise InputError("holds no cases: nothing to compare.", file=baseline.path)
    if base.missing == base.total:
        raise InputError(
            f"nothing to compare: none of its {base.total} case(s) matched an output "
            "(metrics.missing equals metrics.total). Check that the outputs or traces given to "
            "`cases run` belong to these cases (ids, source_trace_id or question text).",
            file=baseline.path,
            field="metrics.missing",
        )
    if allow:
        return
    base_ids, cur_ids = _ids(baseline), _ids(current)
    if base_ids is not None and cur_ids is not None:
        base_set, cur_set = set(base_ids), set(cur_ids)
        only_base = [c for c in base_ids if c not in cur_set]
        only_cur = [c for c in cur_ids if c not in base_set]
        if only_base or only_cur:
            raise InputError(
                f"the baseline {baseline.path} and the current run {current.path} ran different "
                f"case sets ({len(only_base)} case(s) only in the baseline"
                + (f", first {only_base[0]}" if only_base else "")
                + f"; {len(only_cur)} only in the current run"
                + (f", first {only_cur[0]}" if only_cur else "")
                + "). Run both against the same cases.jsonl, or pass `allow_different_cases` "
                "to compare the cases they share.",
                field="case_results",
            )
    elif base.total != cur.total:
        raise InputError(
            f"the baseline {baseline.path} ran {base.total} case(s) and the current run "
            f"{current.path} ran {cur.total}: different case sets. Run both against the same "
            "cases.jsonl, or pass `allow_different_cases`.",
            field="metrics.total",
        )


def _outcomes(run: RunFile, shared: list[str] | None) -> dict[str, list[str] | None] | None:
    """Per case: None when it passed, else its failed checks ([] for a missing output)."""
    if run.case_results is not None:
        ids = shared if shared is not None else list(run.case_results)
        return {
            c: (None if run.case_results.get(c) == Outcome.PASS else run.failed_checks.get(c, []))
            for c in ids
        }
    return None


def _discordant(
    bad: Callable[[Sequence[str]], bool],
    base: dict[str, list[str] | None],
    cur: dict[str, list[str] | None],
) -> tuple[int, int]:
    worse = better = 0
    for case_id in base.keys() | cur.keys():
        b, c = base.get(case_id), cur.get(case_id)
        was = b is not None and bad(b)
        now = c is not None and bad(c)
        worse += now and not was
        better += was and not now
    return worse, better


class _Gate:
    def __init__(self, baseline: RunFile, current: RunFile, options: GateOptions) -> None:
        self.baseline, self.current, self.options = baseline, current, options
        shared: list[str] | None = None
        if baseline.case_results is not None and current.case_results is not None:
            shared = [c for c in baseline.case_results if c in current.case_results]
        self.shared = shared
        base = _outcomes(baseline, shared)
        cur = _outcomes(current, shared)
        if base is None or cur is None:
            # trace2eval files list only their failures: every other case passed.
            base = {c: checks for c, checks in baseline.failed_checks.items()}
            cur = {c: checks for c, checks in current.failed_checks.items()}
            if shared is not None:
                base = {c: v for c, v in base.items() if c in shared}
                cur = {c: v for c, v in cur.items() if c in shared}
        self.base_outcomes: dict[str, list[str] | None] = base
        self.cur_outcomes: dict[str, list[str] | None] = cur
        self.violations: list[Violation] = []
        self.within_noise: list[str] = []

    def rate_rule(self, rule: Rule, b: float, c: float, allowed: float) -> None:
        assert rule.bad is not None
        metric = rule.metric
        verb = "dropped" if rule.higher_is_better else "rose"
        text = f"{verb} by {rule.change(b, c):.4f} (allowed {allowed:.4f})"
        worse, better = _discordant(rule.bad, self.base_outcomes, self.cur_outcomes)
        p = mcnemar_worse_p(worse, better)
        noise = f"{worse} case(s) worse, {better} better, McNemar p={p:.3g}"
        if p < ALPHA:
            self.violations.append(Violation(metric, b, c, f"{text}; {noise}"))
        else:
            self.within_noise.append(
                f"{metric} {text}, but within run-to-run noise ({noise} ≥ {ALPHA:g})"
            )

    def timing_rule(self, rule: Rule, b: float, c: float, allowed: float) -> None:
        assert rule.per_case is not None and rule.statistic is not None
        metric = rule.metric
        rise = c - b
        text = f"rose by {rise:.4f} (allowed {allowed:.4f})"
        if rule.latency_floor and rise < self.options.min_latency_change_ms:
            self.within_noise.append(
                f"{metric} {text}, but by less than {self.options.min_latency_change_ms:g} ms "
                "(`min_latency_change_ms`)"
            )
            return
        statistic = rule.statistic
        base_values = self.baseline.per_case(rule.per_case)
        cur_values = self.current.per_case(rule.per_case)
        if self.shared is not None:
            base_values = {k: v for k, v in base_values.items() if k in self.shared}
            cur_values = {k: v for k, v in cur_values.items() if k in self.shared}
        bound = bootstrap_increase_bound(
            list(base_values.values()), list(cur_values.values()), statistic
        )
        if bound is None:
            self.violations.append(Violation(metric, b, c, text))
        elif bound > 0:
            self.violations.append(
                Violation(
                    metric, b, c, f"{text}; bootstrap 95% lower bound of the rise {bound:.4g} > 0"
                )
            )
        else:
            self.within_noise.append(
                f"{metric} {text}, but within run-to-run noise (bootstrap 95% lower bound of "
                f"the rise {bound:.4g} ≤ 0)"
            )

    def aggregate_rules(self) -> None:
        base, cur = self.baseline.metrics, self.current.metrics
        scale = self.options.tolerance_scale
        for rule in RULES:
            b, c = base.get(rule.metric), cur.get(rule.metric)
            if b is None or c is None:
                continue
            allowed = rule.allowance * scale * (b if rule.relative else 1)
            if rule.change(b, c) <= allowed:
                continue
            if rule.per_case is not None:
                self.timing_rule(rule, b, c, allowed)
            else:
                self.rate_rule(rule, b, c, allowed)

    def flips(self) -> tuple[list[str], list[str]]:
        base, cur = self.base_outcomes, self.cur_outcomes
        order = self.shared if self.shared is not None else list(dict.fromkeys([*base, *cur]))
        pass_to_fail = [c for c in order if base.get(c) is None and cur.get(c) is not None]
        fail_to_pass = [c for c in order if base.get(c) is not None and cur.get(c) is None]
        return pass_to_fail, fail_to_pass


def compare(baseline: RunFile, current: RunFile, options: GateOptions | None = None) -> Comparison:
    """Gate ``current`` against ``baseline``; raises InputError when they cannot be compared."""
    options = options or GateOptions()
    options.validate()
    check_comparable(baseline, current, options.allow_different_cases)
    gate = _Gate(baseline, current, options)
    gate.aggregate_rules()
    no_output = _without_output(current)
    lost = _lost_records(baseline, current, no_output, gate.shared)
    violation = _missing_rule(baseline, current, lost)
    if violation is not None and not options.allow_missing:
        gate.violations.append(violation)
    pass_to_fail, fail_to_pass = gate.flips()
    behavioural = [
        c
        for c in pass_to_fail
        if c not in no_output
        and (not (checks := gate.cur_outcomes.get(c)) or not set(checks) <= TIMING_CHECKS)
    ]
    if behavioural:
        gate.violations.append(
            Violation(
                "case_outcomes",
                len(pass_to_fail),
                len(behavioural),
                f"{len(behavioural)} case(s) passed before and now fail a content or process "
                f"check: {', '.join(behavioural[:5])}" + (" …" if len(behavioural) > 5 else ""),
            )
        )
    gone: list[str] = []
    added: list[str] = []
    if baseline.case_results is not None and current.case_results is not None:
        gone = [c for c in baseline.case_results if c not in current.case_results]
        added = [c for c in current.case_results if c not in baseline.case_results]
    return Comparison(
        gate.violations,
        pass_to_fail,
        gone,
        fail_to_pass,
        gate.within_noise,
        added,
        no_output,
        lost,
        behavioural,
        options.allow_missing,
    )


def _without_output(run: RunFile) -> list[str]:
    """Cases without a record: from the outcomes, or a trace2eval file's failures list."""
    if run.case_results is not None:
        return [c for c, o in run.case_results.items() if o == Outcome.MISSING]
    return [f.case_id for f in run.metrics.failures if f.reason == FailureReason.MISSING_OUTPUT]


def _lost_records(
    baseline: RunFile, current: RunFile, no_output: list[str], shared: list[str] | None
) -> list[str]:
    """Current cases without an output that had one in the baseline."""
    before = set(_without_output(baseline))
    known = set(baseline.case_results) if baseline.case_results is not None else None
    return [
        c
        for c in no_output
        if c not in before and (known is None or c in known) and (shared is None or c in shared)
    ]


def _missing_rule(baseline: RunFile, current: RunFile, lost: list[str]) -> Violation | None:
    """Fewer matched cases than the baseline: a case without a record is not a pass."""
    if not lost:
        return None
    base_matched = baseline.metrics.total - baseline.metrics.missing
    cur_matched = current.metrics.total - current.metrics.missing
    shown = ", ".join(lost[:3]) + (" …" if len(lost) > 3 else "")
    return Violation(
        "missing",
        base_matched,
        cur_matched,
        f"{cur_matched} case(s) matched a record, {base_matched} in the baseline: "
        f"{len(lost)} case(s) lost their record ({shown}); a missing case is not a pass",
    )
