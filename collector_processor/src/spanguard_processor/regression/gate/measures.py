"""What ``check`` measures on each repeat: one :class:`Measure` per metric, read off the run
files' repeats (contract C2) with no knowledge of how they were produced.

* ``pass_rate`` — a repeat passes when it fails no assertion other than a timing limit (a
  timing limit depends on the machine; latency has its own load-robust metric); a call that
  raised counts as a failure.
* one rate per kind of property of contract C1 (``property: escalated``, ``property: min_chars``
  …): the share of repeats where the case's properties of that kind held, higher is better (a
  property states what the case's production cluster did). A kind, not each value, is one
  metric: a ``min_chars`` of 29 is one case's own figure, and a metric of one case is
  INCONCLUSIVE at any replay size; the evidence line names the case's own values.
* derived from every repeat's process: ``escalation_rate``, ``refusal_rate`` (the
  ``not_fallback`` assertion failed), ``retry_rate`` (a tool called twice in a row),
  ``tool use: NAME`` per tool (over the cases whose baseline called it), ``tool_count`` and
  ``plan_steps``.
* ``latency`` and ``cost`` — per-case ratios (medians of the repeats, each figure read as at
  least its floor: 10 ms by default, the options' ``min_latency_ms``, and $0.000001), as
  logs; latency's are
  centred on the run's median ratio, so a run measured on a busier machine is not a regression
  by itself (``latency (overall)``, that median ratio, is shown and gates only with
  ``same_machine``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..case import Check, Property
from ..checks import CheckKind
from ..run.repeats import ERROR, Repeat
from .paired import Scale
from .rules import TIMING_CHECKS

__all__ = [
    "LATENCY",
    "LATENCY_OVERALL",
    "PROPERTY",
    "Measure",
    "Tolerances",
    "case_values",
    "context",
    "measures_for",
    "paired_values",
    "property_kind",
    "property_label",
]

LATENCY = "latency"
#: A property metric's name is this prefix and the property's kind.
PROPERTY = "property: "
LATENCY_OVERALL = "latency (overall)"
COST = "cost"


@dataclass(frozen=True)
class Tolerances:
    """How much worse a metric may get: rates in points of share, counts in calls or steps,
    timings as a ratio (1.2 = 20 % slower)."""

    pass_rate: float = 0.05
    rate: float = 0.10
    count: float = 0.5
    ratio: float = 1.2

    def scaled(self, factor: float) -> Tolerances:
        return Tolerances(
            self.pass_rate * factor,
            self.rate * factor,
            self.count * factor,
            1.0 + (self.ratio - 1.0) * factor,
        )


Reader = Callable[[str, Repeat, "CaseContext"], float | None]


@dataclass(frozen=True)
class CaseContext:
    """What a reader may know of a case: its properties and the tools its baseline called."""

    properties: tuple[Property, ...]
    baseline_tools: frozenset[str]
    kinds: Mapping[str, tuple[int, ...]]  # property kind → its indices in ``properties``

    def labels(self, kind: str) -> str:
        """The case's own properties of ``kind``, as the evidence names them."""
        return "; ".join(property_label(self.properties[i].check) for i in self.kinds.get(kind, ()))


@dataclass(frozen=True)
class Measure:
    """One metric: how it reads a repeat, its scale, which way is better, its tolerance (on
    the per-case change's scale: points, counts, or log ratio), whether it gates when the runs
    hold no signal for it (``required``), and what recorded the signal (for NO_SIGNAL)."""

    name: str
    read: Reader
    scale: Scale
    higher_is_better: bool
    tolerance: float
    required: bool = False
    signal: str = ""
    kind: str = "rate"  # rate | count | timing


def property_label(check: Check) -> str:
    """``escalated=false``, ``tools_include=credit_bureau`` …: a property's name in reports."""
    value = check.value
    if isinstance(value, list | tuple):
        shown = ",".join(str(v) for v in value)
    elif isinstance(value, bool):
        shown = "true" if value else "false"
    else:
        shown = "" if value is None else str(value)
    return f"{check.type}={shown}" if shown else check.type


def property_kind(check: Check) -> str:
    """The metric a property counts towards: its check's type (``escalated``, ``min_chars`` …)."""
    return check.type


def _passed(name: str, r: Repeat, ctx: CaseContext) -> float | None:
    if r.outcome == ERROR:
        return 0.0
    return float(all(c in TIMING_CHECKS for c in r.failed_checks))


def _property(kind: str) -> Reader:
    """Held when every property of ``kind`` the repeat recorded held (None: none recorded)."""

    def read(name: str, r: Repeat, ctx: CaseContext) -> float | None:
        held = [r.properties[i] for i in ctx.kinds.get(kind, ()) if i < len(r.properties)]
        known = [h for h in held if h is not None]
        return float(all(known)) if known else None

    return read


def _process(get: Callable[[Repeat], float | None]) -> Reader:
    def read(name: str, r: Repeat, ctx: CaseContext) -> float | None:
        return None if r.outcome == ERROR or r.tool_count is None else get(r)

    return read


def _retried(r: Repeat) -> float:
    return float(any(a == b for a, b in zip(r.tools, r.tools[1:], strict=False)))


def _tool(tool: str) -> Reader:
    def read(name: str, r: Repeat, ctx: CaseContext) -> float | None:
        if tool not in ctx.baseline_tools or r.outcome == ERROR or r.tool_count is None:
            return None
        return float(tool in r.tools)

    return read


def _count(attr: str) -> Reader:
    """A repeat's count of ``attr`` (``tool_count``, ``plan_steps``), 0 when unrecorded in a
    run that recorded a process."""
    return _process(lambda r: float(getattr(r, attr) or 0))


def _refused(name: str, r: Repeat, ctx: CaseContext) -> float | None:
    return None if r.outcome == ERROR else float(CheckKind.NOT_FALLBACK in r.failed_checks)


#: Below these a latency or cost is read as the floor itself: under 10 ms the machine's
#: scheduling dominates (the demo's requests take about a millisecond, and a median moving
#: 0.4 → 1.1 ms FAILed latency), and $0.000001 is the precision costs are printed at. The
#: trace2eval rules' ``min_latency_change_ms`` default is the same 10 ms.
FLOORS = {"latency_ms": 10.0, "cost_usd": 1e-6}


def _figure(attr: str, floor: float) -> Reader:

    def read(name: str, r: Repeat, ctx: CaseContext) -> float | None:
        value = getattr(r, attr)
        if r.outcome == ERROR or value is None or value <= 0:
            return None
        return max(float(value), floor)

    return read


def measures_for(
    kinds: Sequence[str],
    tools: Sequence[str],
    tol: Tolerances,
    latency_floor: float = FLOORS["latency_ms"],
) -> tuple[Measure, ...]:
    """Every metric ``check`` decides, in report order: ``kinds`` are the runs' property
    kinds, ``tools`` the tools the baseline called; a latency under ``latency_floor`` ms is
    read as the floor."""
    rate, count = Scale.RATE, Scale.COUNT
    proc = "a process trace (trace.tool_calls in outputs lines, agent spans in traces)"
    found = [Measure("pass_rate", _passed, rate, True, tol.pass_rate, True, "a scored repeat")]
    found += [
        Measure(f"{PROPERTY}{kind}", _property(kind), rate, True, tol.rate, signal="C1")
        for kind in kinds
    ]
    found += [
        Measure(
            "escalation_rate",
            _process(lambda r: float(bool(r.escalated))),
            rate,
            False,
            tol.rate,
            signal=proc,
        ),
        Measure("refusal_rate", _refused, rate, False, tol.rate, signal="an output"),
        Measure("retry_rate", _process(_retried), rate, False, tol.rate, signal=proc),
    ]
    found += [Measure(f"tool use: {t}", _tool(t), rate, True, tol.rate, signal=proc) for t in tools]
    found += [
        Measure(attr, _count(attr), count, False, tol.count, signal=proc, kind="count")
        for attr in ("tool_count", "plan_steps")
    ]
    log_tol = _log(tol.ratio)
    found += [
        Measure(name, _figure(attr, floor), Scale.LOG, False, log_tol, signal=attr, kind="timing")
        for name, attr, floor in (
            (LATENCY, "latency_ms", latency_floor),
            (LATENCY_OVERALL, "latency_ms", latency_floor),
            (COST, "cost_usd", FLOORS["cost_usd"]),
        )
    ]
    return tuple(found)


def _log(ratio: float) -> float:
    return math.log(max(ratio, 1.0 + 1e-9))


def case_values(
    measure: Measure, case_id: str, repeats: Sequence[Repeat], ctx: CaseContext
) -> list[float]:
    """The measure's value on each repeat of one case and version that recorded it."""
    out = []
    for r in repeats:
        value = measure.read(case_id, r, ctx)
        if value is not None:
            out.append(value)
    return out


def paired_values(
    measure: Measure,
    case_id: str,
    base: Sequence[Repeat],
    current: Sequence[Repeat],
    ctx: CaseContext,
) -> tuple[list[float], list[float]] | None:
    """The measure on the requests both runs recorded, aligned (baseline's order): a recorded
    request keyed by its input (``Repeat.request``) is paired with the same input's request in
    the other run. None — compare the case's repeats as two samples — when a repeat has no key,
    a key repeats within a run (a replay, or one question asked twice), fewer than half of
    either run's requests have their pair (another day's traffic that asked a few questions
    again: the pairs would leave the rest out), or no pair holds the measure on both sides."""
    keys_b = [r.request for r in base]
    keys_c = [r.request for r in current]
    for keys in (keys_b, keys_c):
        if not keys or None in keys or len(set(keys)) < len(keys):
            return None
    at = {key: r for key, r in zip(keys_c, current, strict=True)}
    pairs = sum(1 for key in keys_b if key in at)
    if 2 * pairs < max(len(keys_b), len(keys_c)):
        return None
    b_out: list[float] = []
    c_out: list[float] = []
    for r in base:
        other = at.get(r.request)
        if other is None:
            continue
        vb, vc = measure.read(case_id, r, ctx), measure.read(case_id, other, ctx)
        if vb is not None and vc is not None:
            b_out.append(vb)
            c_out.append(vc)
    return (b_out, c_out) if b_out else None


def context(
    properties: Mapping[str, tuple[Property, ...]],
    baseline: Mapping[str, Sequence[Repeat]],
    case_id: str,
) -> CaseContext:
    tools = frozenset(t for r in baseline.get(case_id, ()) for t in r.tools)
    props = properties.get(case_id, ())
    kinds: dict[str, list[int]] = {}
    for index, prop in enumerate(props):
        kinds.setdefault(property_kind(prop.check), []).append(index)
    return CaseContext(props, tools, {k: tuple(v) for k, v in kinds.items()})
