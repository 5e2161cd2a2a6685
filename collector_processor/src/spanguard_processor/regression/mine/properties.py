"""A case's properties and their share in its production cluster (docs/regression.md, "Stable
properties and rates").

For each thing a case can check about what the agent did — the tools it called (each one, and
their order, unless two requests called two tools in opposite orders), escalation, plan
length, friction, the document retrieved near the top, tool retries, the class of its
answer — :func:`learn_properties` proposes the check the cluster's most common behaviour
satisfies and counts, over the cluster's clean requests that recorded
what the check reads, how many satisfied it. A property that held in *every* one of them is
a candidate for **stable**: an assertion (``trace_checks``), which by construction passes on
the traffic it came from. Any other is a **rate** (``stable: false``): a 4 % escalation or a
3 % tool retry is something the gate compares between versions, never a check one run can
fail. Tool retries are always a rate, even at 0 of N: a retry is a transient, not a behaviour.

"Held every time" is evidence only when the cluster is large enough to have shown an exception
(:func:`settle_stability`): with 4 % random escalations, 18 requests show none about half the
time. So each cluster's requests that did other than its usual (:func:`variation`: per kind of
behaviour — escalation, answer class, friction, plan length — and per tool, in either
direction) are pooled over the log (:func:`log_miss_rates`): a random escalation is an
exception among approvals in one cluster and, grouped with the systematic escalations of a
neighbouring slot range, a request that escalated where its input did not ask for it in
another. When the log shows a behaviour varying at a rate p > 0, a cluster of n
requests that never varied is stable only if a variation at that rate would have shown in it
with probability at least 1 − α, i.e. (1 − p)^n ≤ α (α = 0.05: at 4 %, n ≥ 74). A behaviour
the log never saw vary (a tool called on every request of its path) stays stable at any size.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import TypeVar

from ...traces.model import ProcessTrace
from ..case import Check, Evidence, Property
from ..checks import (
    TOP_K,
    CheckKind,
    check_type,
    percentile,
    run_text_check,
    run_trace_check,
    without_retries,
)
from ..outcome import AnswerClass, classify_answer

__all__ = [
    "STABLE_ALPHA",
    "assertion_properties",
    "baseline_figures",
    "learn_properties",
    "log_miss_rates",
    "settle_stability",
    "variation",
]

#: A property held every time is stable only if a miss at the log's rate would have shown in
#: its cluster with probability at least 1 − this.
STABLE_ALPHA = 0.05

_K = CheckKind
T = TypeVar("T", bound=Hashable)


def _mode(values: Sequence[T], larger: Callable[[T], object] | None = None) -> T:
    """The most common value; ties go to the larger (by ``larger``) or the first seen."""
    counts = Counter(values)
    order = {value: i for i, value in reversed(list(enumerate(values)))}
    key: Callable[[T], object] = larger if larger is not None else (lambda v: -order[v])
    return max(counts, key=lambda v: (counts[v], key(v)))


def _measure(check: Check, runs: Sequence[Evidence]) -> Property | None:
    """``check`` with how many of ``runs`` (those that recorded what it reads) satisfy it."""
    ct = check_type(check.type)
    assert ct is not None
    results = [
        run_text_check(check, r.output) if ct.family == "text" else run_trace_check(check, r)
        for r in runs
    ]
    verdicts = [r.passed for r in results if r.passed is not None]
    if not verdicts:
        return None
    held = sum(verdicts)
    return Property(check, held, len(verdicts), held == len(verdicts))


def _tools(process: ProcessTrace) -> list[str]:
    return [call.name for call in process.tool_calls]


def _tool_checks(processes: Sequence[ProcessTrace]) -> list[Check]:
    called = [set(_tools(p)) for p in processes]
    common = set.intersection(*called)
    out = [Check.of(_K.TOOLS_INCLUDE, value=sorted(common))] if common else []
    # each tool some but not all requests called: its own rate
    out += [Check.of(_K.TOOLS_INCLUDE, value=[t]) for t in sorted(set.union(*called) - common)]
    sequences = [tuple(without_retries(_tools(p))) for p in processes]
    usual = _mode(sequences)
    if len(usual) > 1 and not _order_varies(sequences):
        out.append(Check.of(_K.TOOL_SEQUENCE, value=list(usual)))
    return out


def _order_varies(sequences: Sequence[tuple[str, ...]]) -> bool:
    """Whether two requests called two tools in opposite orders (by each tool's first call).
    Then no order is held by every request, and the most common one, as a rate, is biased by
    its own selection (of a 50/50 order, the larger of two coins): the tool set and each
    tool's use are checked, the order is not."""
    before: set[tuple[str, str]] = set()
    for sequence in sequences:
        first = list(dict.fromkeys(sequence))
        before.update((a, b) for i, a in enumerate(first) for b in first[i + 1 :])
    return any((b, a) in before for a, b in before)


def _count_checks(processes: Sequence[ProcessTrace]) -> list[Check]:
    out = [Check.of(_K.ESCALATED, value=_mode([p.escalated for p in processes], int))]
    plans = [len(p.plan_steps) for p in processes]
    if max(plans):  # a plan is checked only when the requests had one
        out.append(Check.of(_K.MAX_PLAN_STEPS, value=_mode(plans, int)))
    out.append(
        Check.of(
            _K.MAX_FRICTION_POINTS, value=_mode([len(p.friction_points) for p in processes], int)
        )
    )
    return out


def _top_documents(process: ProcessTrace) -> dict[str, int]:
    best: dict[str, int] = {}
    for doc in process.retrieved_documents:
        if isinstance(doc.id, str) and isinstance(doc.rank, int) and doc.rank <= TOP_K:
            best[doc.id] = min(doc.rank, best.get(doc.id, doc.rank))
    return best


def _doc_check(processes: Sequence[ProcessTrace]) -> list[Check]:
    tops = [_top_documents(p) for p in processes]
    seen = Counter(doc for top in tops for doc in top)
    if not seen:
        return []
    # the document most requests retrieved near the top; ties: the best worst rank, then id
    doc = min(seen, key=lambda d: (-seen[d], max(t.get(d, TOP_K + 1) for t in tops), d))
    return [Check.of(_K.DOC_IN_TOP_K, value=doc, k=TOP_K)]


def _outcome_checks(runs: Sequence[Evidence], processes: Sequence[ProcessTrace]) -> list[Check]:
    out = []
    if any(p.tool_calls for p in processes):
        out.append(Check.of(_K.MAX_TOOL_RETRIES, value=0))  # the share of requests without one
    classes = [classify_answer(r.output) for r in runs]
    if any(c != AnswerClass.TEXT for c in classes):
        out.append(Check.of(_K.ANSWER_CLASS, value=_mode(classes)))
    return out


def learn_properties(runs: Sequence[Evidence]) -> list[Property]:
    """The process and outcome properties of ``runs`` (the clean requests of one cluster), each
    the check its most common behaviour satisfies, with its share; empty without any process
    trace (plain logs keep trace2eval's cases)."""
    processes = [r.process for r in runs if r.process is not None]
    if not processes:
        return []
    checks = (
        _tool_checks(processes)
        + _count_checks(processes)
        + _doc_check(processes)
        + _outcome_checks(runs, processes)
    )
    found = [_measure(check, runs) for check in checks]
    # A retry is a transient (a flaky call), not a behaviour: always a rate, never asserted.
    return [
        Property(p.check, p.held, p.of, False) if p.check.type == _K.MAX_TOOL_RETRIES else p
        for p in found
        if p is not None
    ]


def _behaviours(run: Evidence, process: ProcessTrace) -> dict[str, Hashable]:
    """What one request did, per kind of behaviour a property checks: its escalation flag,
    answer class, friction count, plan length, and whether it called each tool."""
    out: dict[str, Hashable] = {
        _K.ESCALATED: process.escalated,
        _K.ANSWER_CLASS: classify_answer(run.output),
        _K.MAX_FRICTION_POINTS: len(process.friction_points),
        _K.MAX_PLAN_STEPS: len(process.plan_steps),
    }
    out.update({f"{_K.TOOLS_INCLUDE}={tool}": True for tool in _tools(process)})
    return out


def variation(runs: Sequence[Evidence]) -> dict[str, tuple[int, int]]:
    """Per kind of behaviour (:func:`_keys`), how many of one cluster's requests did other
    than the cluster's usual (its most common value, when more than half share it), of how
    many; in either direction, so a request that did not escalate among escalations counts as
    one that did among non-escalations."""
    pairs = [(r, r.process) for r in runs if r.process is not None]
    seen = [_behaviours(r, p) for r, p in pairs]
    keys = dict.fromkeys(k for b in seen for k in b)
    out: dict[str, tuple[int, int]] = {}
    for key in keys:
        values = [b.get(key, False) for b in seen]
        usual = Counter(values).most_common(1)[0][1]
        if 2 * usual > len(values):
            out[key] = (len(values) - usual, len(values))
    return out


def log_miss_rates(clusters: Iterable[Mapping[str, tuple[int, int]]]) -> dict[str, tuple[int, int]]:
    """Each kind of behaviour's :func:`variation`, pooled over the log's clusters."""
    pooled: dict[str, tuple[int, int]] = {}
    for counts in clusters:
        for key, (varied, of) in counts.items():
            before = pooled.get(key, (0, 0))
            pooled[key] = (before[0] + varied, before[1] + of)
    return pooled


def _keys(check: Check) -> list[str]:
    """The behaviours a property is about: each tool of a ``tools_include``; for the answer
    class, also escalation (``refer`` is the class of an escalated answer, so an escalation
    that varies makes the class vary with it, though a small mixed cluster may show no usual
    class to count it against); else its kind (a ``tool_sequence``, a document or a retry is
    not pooled)."""
    if check.type == _K.TOOLS_INCLUDE and isinstance(check.value, list | tuple):
        return [f"{check.type}={tool}" for tool in check.value]
    if check.type == _K.ANSWER_CLASS:
        return [check.type, _K.ESCALATED]
    return [check.type]


def _log_rate(check: Check, rates: Mapping[str, tuple[int, int]]) -> float:
    shares = [m / t for m, t in (rates.get(k, (0, 0)) for k in _keys(check)) if t]
    return max(shares, default=0.0)


def settle_stability(
    props: Sequence[Property],
    rates: Mapping[str, tuple[int, int]],
    alpha: float = STABLE_ALPHA,
) -> list[Property]:
    """``props`` with a property held every time made a rate when its cluster is too small to
    tell "never" from the rate p the log shows that behaviour varying at: (1 − p)^n > α."""
    out = []
    for p in props:
        rate = _log_rate(p.check, rates)
        if p.stable and rate > 0 and (1.0 - rate) ** p.of > alpha:
            p = Property(p.check, p.held, p.of, False)
        out.append(p)
    return out


def assertion_properties(checks: Sequence[Check], runs: Sequence[Evidence]) -> list[Property]:
    """The case's own assertions (text and timing checks) with their share in ``runs``: stable,
    whatever the share — a human-written expectation is asserted even where traffic broke it."""
    found = [_measure(check, runs) for check in checks if check_type(check.type) is not None]
    return [Property(p.check, p.held, p.of, True) for p in found if p is not None]


def _figures(values: list[float], digits: int) -> dict[str, float | int]:
    median = percentile(values, 0.5)
    p95 = percentile(values, 0.95)
    assert median is not None and p95 is not None
    return {"n": len(values), "median": round(median, digits), "p95": round(p95, digits)}


def baseline_figures(runs: Sequence[Evidence]) -> dict[str, dict[str, float | int]] | None:
    """Latency and cost of ``runs`` (count, median, p95), for the report and the gate."""
    out: dict[str, dict[str, float | int]] = {}
    latency = [r.latency_ms for r in runs if isinstance(r.latency_ms, float)]
    cost = [r.cost_usd for r in runs if isinstance(r.cost_usd, float)]
    if latency:
        out["latency_ms"] = _figures(latency, 2)
    if cost:
        out["cost_usd"] = _figures(cost, 8)
    return out or None
