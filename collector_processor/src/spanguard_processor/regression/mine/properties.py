"""A case's properties and their share in its production cluster (docs/regression.md, "Stable
properties and rates").

For each thing a case can check about what the agent did — the tools it called (each one, and
their order), escalation, plan length, friction, the document retrieved near the top, tool
retries, the class of its answer — :func:`learn_properties` proposes the check the cluster's
most common behaviour satisfies and counts, over the cluster's clean requests that recorded
what the check reads, how many satisfied it. A property that held in *every* one of them is
**stable**: it becomes an assertion (``trace_checks``), and by construction passes on the
traffic it came from. Any other is a **rate** (``stable: false``): a 4 % escalation or a 3 %
tool retry is something the gate compares between versions, never a check one run can fail.
Tool retries are always a rate, even at 0 of N: a retry is a transient, not a behaviour.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Sequence
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

__all__ = ["assertion_properties", "baseline_figures", "learn_properties"]

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
    if len(usual) > 1:
        out.append(Check.of(_K.TOOL_SEQUENCE, value=list(usual)))
    return out


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
