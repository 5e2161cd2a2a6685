"""``check``'s verdict from repeats: four outcomes per metric (docs/regression.md, "Check").

Per metric (:mod:`.measures`), in the order they are decided:

* **NO_SIGNAL** — no case holds the metric's values in both runs (no process recorded for the
  tool metrics, no latency …). Only ``pass_rate`` gates on it; the rest are listed.
* **FAIL** — the data show the candidate worse by more than the tolerance: the one-sided test of
  H0: D ≤ τ (:func:`.paired.paired_bound`), or a case's own one-sided test (Fisher for a 0/1
  property, Mann–Whitney for counts and timings), Holm-adjusted in one family with every
  metric's test and every case's, is below α.
* **PASS** — the data show D < τ: the one-sided 1 − α upper bound is under the tolerance (an
  intersection–union test over metrics: no correction is needed for PASS).
* **INCONCLUSIVE** — neither; says how many cases, or repeats per case, would decide.

A case with repeats in the baseline and none in the current run fails ``missing`` (a missing
case is not a pass) unless ``allow_missing`` — in a replay, where every case is called. In
recorded traffic, which need not ask every question, a case with no request on one side is
no signal for that case: ``missing`` is NO_SIGNAL, counted and listed, never a FAIL by itself.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..run.repeats import ERROR, Repeat
from .evidence import distribution_diff
from .measures import (
    LATENCY,
    LATENCY_OVERALL,
    PROPERTY,
    CaseContext,
    Measure,
    case_values,
    context,
    measures_for,
    paired_values,
    property_kind,
)
from .noise import mcnemar_worse_p
from .outcomes import (
    CaseChange,
    MetricOutcome,
    MetricVerdict,
    RegressionOptions,
    RegressionVerdict,
)
from .paired import (
    PairedBound,
    PooledCounts,
    Scale,
    case_weights,
    fisher_worse_p,
    paired_bound,
    shift_worse_p,
    tarone_holm,
)
from .rules import TIMING_CHECKS
from .runfile import RunFile

__all__ = [
    "CaseChange",
    "MetricOutcome",
    "MetricVerdict",
    "RegressionOptions",
    "RegressionVerdict",
    "decide",
]

#: Cases shown under a FAIL (the ones that moved most).
SHOWN_CASES = 3


@dataclass
class _Units:
    """One measure's per-case data."""

    ids: list[str] = field(default_factory=list)
    base: list[list[float]] = field(default_factory=list)
    cur: list[list[float]] = field(default_factory=list)
    names: list[str] = field(default_factory=list)  # a property metric: each case's own labels
    paired: list[bool] = field(default_factory=list)  # base[i][j] and cur[i][j]: one request


def _units(
    m: Measure, base: RunFile, cur: RunFile, shared: Sequence[str], ctxs: Mapping[str, CaseContext]
) -> _Units:
    out = _Units()
    for case_id in shared:
        ctx = ctxs[case_id]
        b_runs, c_runs = base.repeats.get(case_id, ()), cur.repeats.get(case_id, ())
        pairs = paired_values(m, case_id, b_runs, c_runs, ctx)
        if pairs is not None:
            b, c = pairs
        else:
            b = case_values(m, case_id, b_runs, ctx)
            c = case_values(m, case_id, c_runs, ctx)
        if b and c:
            out.ids.append(case_id)
            out.base.append(b)
            out.cur.append(c)
            out.paired.append(pairs is not None)
            if m.name.startswith(PROPERTY):
                out.names.append(ctx.labels(m.name.removeprefix(PROPERTY)))
    return out


def _changes(m: Measure, u: _Units) -> tuple[np.ndarray, float, float]:
    """Per-case changes (positive = worse), the pooled within-case variance, the run ratio."""
    if m.scale is Scale.LOG:
        r = np.array(
            [math.log(np.median(c) / np.median(b)) for b, c in zip(u.base, u.cur, strict=True)]
        )
        logs = [np.log(v) for v in (*u.base, *u.cur)]
        ratio = float(np.median(r)) if r.size else 0.0
        changes = r - ratio if m.name == LATENCY else r
        return changes, _pooled(logs) * (math.pi / 2), ratio  # a median's variance ≈ π/2 × mean's
    sign = 1.0 if m.higher_is_better else -1.0
    changes = np.array(
        [sign * (np.mean(b) - np.mean(c)) for b, c in zip(u.base, u.cur, strict=True)]
    )
    groups: list[np.ndarray] = []
    for b, c, paired in zip(u.base, u.cur, u.paired, strict=True):
        if paired:  # a paired repeat varies as its request's change does: Var(b − c) = 2σ²
            groups.append((np.asarray(b) - np.asarray(c)) / math.sqrt(2.0))
        else:
            groups += [np.asarray(b), np.asarray(c)]
    return changes, _pooled(groups), 0.0


def _pooled(groups: Sequence[np.ndarray]) -> float:
    dof = sum(len(g) - 1 for g in groups if len(g) > 1)
    if dof == 0:
        return 0.0
    return float(sum(((g - g.mean()) ** 2).sum() for g in groups if len(g) > 1) / dof)


def _case_p(
    m: Measure, b: list[float], c: list[float], ratio: float, paired: bool
) -> tuple[float, float]:
    """One case's own one-sided test that it got worse by more than its tolerance: for a rate,
    exact McNemar on the requests that changed when the repeats are paired, else Fisher."""
    if m.kind == "rate" and paired:
        worse, better = _discordant(m, b, c)
        return mcnemar_worse_p(worse, better), 0.5 ** (worse + better)
    if m.kind == "rate":
        return fisher_worse_p(_bad(m, b), len(b), _bad(m, c), len(c))
    if m.kind == "count":
        sign = -1.0 if m.higher_is_better else 1.0
        return shift_worse_p(sign * np.asarray(b), sign * np.asarray(c), 0.0)
    shift = m.tolerance + (ratio if m.name == LATENCY else 0.0)
    return shift_worse_p(np.log(b), np.log(c), shift)


def _shown(ids: list[str], changes: np.ndarray, first: Sequence[str]) -> list[int]:
    order = [ids.index(c) for c in first if c in ids]
    order += [int(i) for i in np.argsort(-changes, kind="stable") if int(i) not in order]
    return [i for i in order if changes[i] > 0 or ids[i] in first][:SHOWN_CASES]


@dataclass(frozen=True)
class _Scored:
    measure: Measure
    units: _Units
    changes: np.ndarray
    ratio: float
    bound: PairedBound | None
    gates: bool
    case_ps: tuple[tuple[float, float], ...]  # per case: p-value, smallest attainable


def _score(
    m: Measure,
    base: RunFile,
    cur: RunFile,
    shared: Sequence[str],
    o: RegressionOptions,
    ctxs: Mapping[str, CaseContext],
) -> _Scored:
    u = _units(m, base, cur, shared, ctxs)
    changes, within, ratio = _changes(m, u)
    k = (
        float(np.mean([len(b) + len(c) for b, c in zip(u.base, u.cur, strict=True)]) / 2)
        if u.ids
        else 1.0
    )
    # a rate weighs each case by its repeats, fixed before any value is read (one estimator)
    weights = case_weights([len(b) for b in u.base], [len(c) for c in u.cur]) if u.ids else []
    rate = m.kind == "rate"
    bound = paired_bound(
        changes,
        m.tolerance,
        o.alpha,
        m.scale,
        within,
        k,
        _pooled_counts(m, u, weights) if rate else None,
        np.asarray(weights) if rate else None,
    )
    gates = (m.name != LATENCY_OVERALL or o.same_machine) and not _timing_property(m)
    case_ps: tuple[tuple[float, float], ...] = ()
    if gates and m.name != LATENCY_OVERALL:
        case_ps = tuple(
            _case_p(m, b, c, ratio, p) for b, c, p in zip(u.base, u.cur, u.paired, strict=True)
        )
    return _Scored(m, u, changes, ratio, bound, gates, case_ps)


def _timing_property(m: Measure) -> bool:
    """A timing limit's property (``max_latency_ms`` …): machine-dependent, as the timing
    limits ``pass_rate`` leaves out; ``latency`` gates timing, robust to load."""
    return m.name.startswith(PROPERTY) and m.name.removeprefix(PROPERTY) in TIMING_CHECKS


def _bad(m: Measure, values: Sequence[float]) -> int:
    return round(sum(1 - v for v in values) if m.higher_is_better else sum(values))


def _discordant(m: Measure, b: Sequence[float], c: Sequence[float]) -> tuple[int, int]:
    """Paired repeats: the requests bad now and good in the baseline, and the reverse."""
    bad_b = [_bad(m, [v]) for v in b]
    bad_c = [_bad(m, [v]) for v in c]
    worse = sum(1 for x, y in zip(bad_b, bad_c, strict=True) if y > x)
    return worse, sum(1 for x, y in zip(bad_b, bad_c, strict=True) if x > y)


def _pooled_counts(m: Measure, u: _Units, weights: Sequence[float]) -> PooledCounts | None:
    """A rate's repeats pooled over cases, for the exact bound of the weighted D
    (:class:`.paired.PooledCounts`). A paired case counts its discordant requests only: a
    request bad in both runs adds the same to both shares, so D is unchanged and the bound is
    not widened by it."""
    if m.kind != "rate" or not u.ids:
        return None
    bad_b = bad_c = n_b = n_c = 0
    per_b: list[float] = []
    per_c: list[float] = []
    for b, c, paired, w in zip(u.base, u.cur, u.paired, weights, strict=True):
        if paired:
            worse, better = _discordant(m, b, c)
            bad_b, bad_c = bad_b + better, bad_c + worse
        else:
            bad_b, bad_c = bad_b + _bad(m, b), bad_c + _bad(m, c)
        n_b, n_c = n_b + len(b), n_c + len(c)
        per_b.append(w / len(b))
        per_c.append(w / len(c))
    total = float(sum(weights))
    return PooledCounts(bad_b, n_b, bad_c, n_c, min(per_b) * n_b / total, max(per_c) * n_c / total)


def _adjust(scored: Sequence[_Scored], alpha: float) -> list[tuple[float | None, list[float]]]:
    """Holm over every gating metric's aggregate test and every case's test, in one family
    (the case tests that could never reject left out, :func:`.paired.tarone_holm`)."""
    ps: list[float] = []
    floors: list[float] = []
    for s in scored:
        aggregate = s.bound is not None and s.gates
        ps.append(s.bound.p_fail if s.bound is not None and aggregate else 1.0)
        floors.append(0.0 if aggregate else 1.0)
        ps.extend(p for p, _ in s.case_ps)
        floors.extend(f for _, f in s.case_ps)
    adjusted = tarone_holm(ps, floors, alpha)
    out: list[tuple[float | None, list[float]]] = []
    at = 0
    for s in scored:
        agg = adjusted[at] if s.bound is not None and s.gates else None
        out.append((agg, adjusted[at + 1 : at + 1 + len(s.case_ps)]))
        at += 1 + len(s.case_ps)
    return out


def _note(s: _Scored, outcome: MetricOutcome) -> str:
    b = s.bound
    if b is None:
        return f"no case recorded {s.measure.signal or 'it'} in both runs"
    if outcome is MetricOutcome.INCONCLUSIVE:
        parts = []
        if b.cases_needed is not None:
            parts.append(f"about {b.cases_needed} cases")
        if b.repeats_needed is not None:
            parts.append(f"about {b.repeats_needed} repeats per case")
        side = "show it worse" if b.estimate > s.measure.tolerance else "decide"
        if b.repeats_needed is None and parts:
            parts[-1] += " (more repeats per case would not: the cases differ among themselves)"
        return f"would {side} with " + " or ".join(parts) if parts else "undecided"
    if outcome is MetricOutcome.REPORT_ONLY and _timing_property(s.measure):
        return "shown, not gated: a timing limit depends on the machine's load (`latency` gates)"
    if outcome is MetricOutcome.REPORT_ONLY:
        return (
            "shown, not gated: the runs may have been measured under different load "
            "(`same_machine` gates it)"
        )
    if not b.worst_case:
        return ""
    if s.measure.kind == "rate":
        return "no case moved: exact bound from the pooled repeats"
    return "no variation between cases: worst-case spread assumed"


def _verdict(
    s: _Scored, agg: float | None, case_ps: list[float], cur: RunFile, alpha: float
) -> tuple[MetricVerdict, list[CaseChange]]:
    m, u = s.measure, s.units
    moved = [i for i, p in enumerate(case_ps) if p < alpha]
    diffs = {
        i: distribution_diff(
            m,
            u.ids[i],
            u.base[i],
            u.cur[i],
            cur.repeats.get(u.ids[i], ()),
            math.exp(s.ratio) if m.name == LATENCY else None,
            u.names[i] if u.names else None,
        )
        for i in range(len(u.ids))
    }
    changes = [CaseChange(u.ids[i], m.name, case_ps[i], diffs[i]) for i in moved]
    if s.bound is None:
        outcome = MetricOutcome.NO_SIGNAL
    elif not s.gates:
        outcome = MetricOutcome.REPORT_ONLY
    elif moved or (agg is not None and agg < alpha):
        outcome = MetricOutcome.FAIL
    elif s.bound.upper < m.tolerance:
        outcome = MetricOutcome.PASS
    else:
        outcome = MetricOutcome.INCONCLUSIVE
    shown = _shown(u.ids, s.changes, [u.ids[i] for i in sorted(moved, key=lambda i: case_ps[i])])
    evidence = tuple(diffs[i] for i in shown) if outcome is not MetricOutcome.PASS else ()
    gating = s.gates and (m.required or outcome is not MetricOutcome.NO_SIGNAL)
    note = _note(s, outcome)
    if outcome is MetricOutcome.FAIL and moved and not (agg is not None and agg < alpha):
        # the cases' own tests decided it: say so, or the row reads as a contradiction
        note = f"{len(moved)} case(s) shown worse by their own test (Holm across cases and metrics)"
        if s.bound is not None and s.bound.upper < m.tolerance:
            note += "; the mean over cases is within tolerance"
    verdict = MetricVerdict(
        m.name,
        outcome,
        gating,
        m.tolerance,
        len(u.ids),
        s.bound,
        agg,
        note,
        evidence,
        m.kind,
    )
    return verdict, changes


def _recorded(run: RunFile) -> bool:
    """Whether a run scored recorded traffic (its repeats answer recorded requests), not a
    replay, where every case is called."""
    return any(r.request is not None for runs in run.repeats.values() for r in runs)


def _missing(base: RunFile, cur: RunFile, shared: Sequence[str], allow: bool) -> MetricVerdict:
    def ran(repeats: Sequence[Repeat]) -> int:
        return sum(r.outcome != ERROR for r in repeats)

    lost = [c for c in shared if ran(base.repeats.get(c, ())) and not ran(cur.repeats.get(c, ()))]
    if lost and (_recorded(base) or _recorded(cur)):
        # recorded traffic need not ask every question: no request is no evidence either way
        new = [
            c for c in shared if ran(cur.repeats.get(c, ())) and not ran(base.repeats.get(c, ()))
        ]
        lines = tuple(
            f"{c}: {ran(base.repeats[c])} request(s) in the baseline, 0 now"
            for c in lost[:SHOWN_CASES]
        )
        note = (
            f"{len(lost)} case(s) had no request in the current traffic"
            + (f" and {len(new)} none in the baseline's" if new else "")
            + ": no signal for them (recorded traffic need not ask every question)"
        )
        return MetricVerdict(
            "missing",
            MetricOutcome.NO_SIGNAL,
            False,
            0.0,
            len(shared),
            None,
            None,
            note,
            lines,
            "cases",
        )
    lines = tuple(
        f"{c} ran {ran(base.repeats[c])} time(s) in the baseline, 0 now" for c in lost[:SHOWN_CASES]
    )
    outcome = (
        MetricOutcome.PASS
        if not lost
        else (MetricOutcome.REPORT_ONLY if allow else MetricOutcome.FAIL)
    )
    note = f"{len(lost)} case(s) lost every repeat; a missing case is not a pass" if lost else ""
    return MetricVerdict(
        "missing", outcome, True, 0.0, len(shared), None, None, note, lines, "cases"
    )


def _most_telling(c: CaseChange) -> tuple[float, str, bool, str]:
    """Strongest first; of one case's changes at one p-value, what changed (a tool, a
    property) before ``pass_rate``, which says only that the case failed."""
    return (c.p_value, c.case_id, c.metric == "pass_rate", c.metric)


def decide(
    baseline: RunFile, current: RunFile, options: RegressionOptions | None = None
) -> RegressionVerdict:
    """The verdict of ``current`` against ``baseline`` from their repeats (contract C2)."""
    o = options or RegressionOptions()
    shared = [c for c in baseline.repeats if c in current.repeats]
    tol = o.tolerances.scaled(o.tolerance_scale)
    kinds = list(
        dict.fromkeys(
            property_kind(p.check) for props in baseline.properties.values() for p in props
        )
    )
    tools = sorted({t for runs in baseline.repeats.values() for r in runs for t in r.tools})
    ctxs = {c: context(baseline.properties, baseline.repeats, c) for c in shared}
    scored = [
        _score(m, baseline, current, shared, o, ctxs)
        for m in measures_for(kinds, tools, tol, o.min_latency_ms)
    ]
    metrics: list[MetricVerdict] = []
    changes: list[CaseChange] = []
    for s, (agg, case_ps) in zip(scored, _adjust(scored, o.alpha), strict=True):
        verdict, moved = _verdict(s, agg, case_ps, current, o.alpha)
        metrics.append(verdict)
        changes.extend(moved)
    metrics.insert(1, _missing(baseline, current, shared, o.allow_missing))

    def mean_repeats(run: RunFile) -> float:
        counts = [sum(r.outcome != ERROR for r in run.repeats.get(c, ())) for c in shared]
        return float(np.mean(counts)) if counts else 0.0

    def errors(run: RunFile) -> int:
        return sum(r.outcome == ERROR for c in shared for r in run.repeats.get(c, ()))

    return RegressionVerdict(
        tuple(metrics),
        tuple(sorted(changes, key=_most_telling)),
        len(shared),
        (mean_repeats(baseline), mean_repeats(current)),
        (errors(baseline), errors(current)),
        o.allow_inconclusive,
    )
