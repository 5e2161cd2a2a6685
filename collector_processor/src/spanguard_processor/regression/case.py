"""A regression case as data: what ``cases build`` writes and ``cases run`` reads.

:meth:`Case.to_dict` writes trace2eval 0.5.1's key order (``cases.jsonl`` is byte-identical to
trace2eval's, apart from the documented ``trace_checks`` and ``adjusted_checks``);
:meth:`Case.from_dict` reads a line of such a file. A case written by hand or by trace2eval may
hold only ``id`` and ``checks``: every other field has a default, and a field ``cases run``
does not use is taken when it has the right type and defaulted otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..traces.model import ProcessTrace
from .casematch import CaseMatch
from .vocabulary import AdjustAction, FailureKind, SelfCheckVerdict

__all__ = [
    "FAILURE_NOT_REPRODUCED",
    "REFERENCE_FAILS_OWN_CHECKS",
    "Adjustment",
    "Case",
    "CaseAnnotation",
    "Check",
    "CheckResult",
    "Evidence",
    "Property",
    "SelfCheck",
    "Signal",
]


@dataclass(frozen=True, slots=True)
class Signal:
    """Why a log row is worth a case (:mod:`.signals`), with its weight in the score."""

    name: str
    weight: float
    detail: str

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "weight": self.weight, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class Check:
    """One check object of a case, e.g. ``{"type": "min_chars", "value": 12}``; its kind is
    :func:`~.checks.check_type` of :attr:`type`. ``items`` keeps every key in the order it was
    written, so a case file reads and writes back byte-identically."""

    items: tuple[tuple[str, object], ...]

    @classmethod
    def of(cls, kind: str, **params: object) -> Check:
        return cls((("type", kind), *params.items()))

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Check:
        return cls(tuple(data.items()))

    def to_dict(self) -> dict[str, object]:
        return dict(self.items)

    def get(self, key: str, default: object = None) -> object:
        for name, value in self.items:
            if name == key:
                return value
        return default

    @property
    def type(self) -> str:
        for name, value in self.items:  # get("type"), inlined: read for every check run
            if name == "type":
                return str(value).strip()
        return ""

    @property
    def value(self) -> object:
        return self.get("value")

    def with_value(self, value: object) -> Check:
        """The same check with ``value`` replaced (or added last)."""
        if all(name != "value" for name, _ in self.items):
            return Check((*self.items, ("value", value)))
        return Check(tuple((n, value if n == "value" else v) for n, v in self.items))


@dataclass(frozen=True, slots=True)
class CheckResult:
    """``passed`` is None when the evidence the check needs is missing (unverified)."""

    type: str
    passed: bool | None
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Evidence:
    """What one run of the agent shows a check: its output text, its process trace (None when
    the run recorded none), and its latency and cost (None when unrecorded)."""

    output: str = ""
    process: ProcessTrace | None = None
    latency_ms: float | None = None
    cost_usd: float | None = None


@dataclass(frozen=True, slots=True)
class Adjustment:
    """A mined check that self-consistency loosened or left out, and why
    (``adjusted_checks``); ``loosened`` is (from, to) for a loosened check."""

    type: str
    action: str  # an AdjustAction
    reason: str
    loosened: tuple[object, object] | None = None

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"type": self.type, "action": self.action}
        if self.loosened is not None:
            out["from"], out["to"] = self.loosened
        out["reason"] = self.reason
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Adjustment:
        loosened = (
            (data.get("from"), data.get("to"))
            if data.get("action") == AdjustAction.LOOSENED
            else None
        )
        return cls(
            str(data.get("type", "")),
            str(data.get("action", "")),
            str(data.get("reason", "")),
            loosened,
        )


@dataclass(frozen=True, slots=True)
class Property:
    """One property of a case with its share in production (``properties``, docs/regression.md):
    of the ``of`` requests of the case's cluster that recorded what ``check`` reads, ``held``
    satisfied it. ``stable`` properties are also assertions (``checks``/``trace_checks``); the
    others are rates, compared between versions and never failed by a single run."""

    check: Check
    held: int
    of: int
    stable: bool

    @property
    def share(self) -> float:
        return self.held / self.of if self.of else 0.0

    def to_dict(self) -> dict[str, object]:
        return {
            "check": self.check.to_dict(),
            "held": self.held,
            "of": self.of,
            "stable": self.stable,
        }

    @classmethod
    def from_dict(cls, data: object) -> Property | None:
        """The property of a ``properties`` entry, or None when the entry is malformed."""
        if not isinstance(data, Mapping) or not isinstance(data.get("check"), Mapping):
            return None
        held, of = data.get("held"), data.get("of")
        if not (_is_count(held) and _is_count(of) and isinstance(data.get("stable"), bool)):
            return None
        assert isinstance(held, int) and isinstance(of, int)
        return cls(Check.from_dict(data["check"]), held, of, bool(data["stable"]))


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


#: Self-check verdicts besides "ok" (kept as names: ``casebuild`` and callers use them).
FAILURE_NOT_REPRODUCED = SelfCheckVerdict.FAILURE_NOT_REPRODUCED
REFERENCE_FAILS_OWN_CHECKS = SelfCheckVerdict.REFERENCE_FAILS_OWN_CHECKS


@dataclass(frozen=True, slots=True)
class SelfCheck:
    """The case's checks run on the output it was mined from."""

    passed: bool = True
    failed_checks: tuple[str, ...] = ()
    verdict: str = SelfCheckVerdict.OK

    def to_dict(self) -> dict[str, object]:
        return {
            "passed": self.passed,
            "failed_checks": list(self.failed_checks),
            "verdict": self.verdict,
        }

    @classmethod
    def from_dict(cls, data: object) -> SelfCheck:
        if not isinstance(data, Mapping):
            return cls()
        failed = data.get("failed_checks")
        return cls(
            bool(data.get("passed", True)),
            tuple(str(c) for c in failed) if isinstance(failed, list) else (),
            str(data.get("verdict", SelfCheckVerdict.OK)),
        )


@dataclass(frozen=True, slots=True)
class CaseAnnotation:
    """Whether a human-written expectation (``expectations.jsonl``) shaped the checks."""

    applied: bool = False
    note: str = ""

    def to_dict(self) -> dict[str, object]:
        return {"applied": self.applied, "note": self.note}

    @classmethod
    def from_dict(cls, data: object) -> CaseAnnotation:
        if not isinstance(data, Mapping):
            return cls()
        return cls(bool(data.get("applied", False)), str(data.get("note") or ""))


def _signal(data: object) -> Signal | None:
    if not isinstance(data, Mapping) or not isinstance(data.get("name"), str):
        return None
    weight = data.get("weight", 0)
    return Signal(
        data["name"], weight if isinstance(weight, int | float) else 0, str(data.get("detail", ""))
    )


def _strings(value: object) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


@dataclass(frozen=True)
class Case:
    """One regression case: its question, its checks and why it was chosen."""

    id: str
    input: str | None
    checks: tuple[Check, ...] = ()
    reference_output: str = ""
    reference_is_trusted: bool = True
    shape_source: str = ""
    failure_kind: str = FailureKind.NONE
    annotation: CaseAnnotation = CaseAnnotation()
    source_trace_id: str | None = None
    score: float = 0
    signals: tuple[Signal, ...] = ()
    occurrences_in_log: int = 1
    duplicate_count: int = 0
    duplicate_trace_ids: tuple[str, ...] = ()
    self_check: SelfCheck = SelfCheck()
    notes: tuple[str, ...] = ()
    trace_checks: tuple[Check, ...] = ()  # process, latency and cost (spanguard only)
    adjusted_checks: tuple[Adjustment, ...] = ()  # checks loosened or left out, and why
    #: Each property with its share in the case's production cluster (agent traffic only).
    properties: tuple[Property, ...] = ()
    #: Latency and cost of the cluster's requests: ``{"latency_ms": {"n", "median", "p95"}, …}``.
    baseline: Mapping[str, Mapping[str, float | int]] | None = None
    #: How a request of another day is recognised as this case's (agent traffic only; absent:
    #: by id, ``source_trace_id`` or the exact question only).
    match: CaseMatch | None = None

    @property
    def rates(self) -> tuple[Property, ...]:
        """The properties that vary in production: compared between versions, never asserted."""
        return tuple(p for p in self.properties if not p.stable)

    @property
    def weak(self) -> bool:
        """A failure seed whose checks cannot catch the failure it came from."""
        return self.self_check.verdict == FAILURE_NOT_REPRODUCED

    @property
    def reference_fails(self) -> bool:
        """A trusted reference that does not satisfy its own checks."""
        return self.self_check.verdict == REFERENCE_FAILS_OWN_CHECKS

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "id": self.id,
            "input": self.input,
            "checks": [c.to_dict() for c in self.checks],
            "reference_output": self.reference_output,
            "reference_is_trusted": self.reference_is_trusted,
            "shape_source": self.shape_source,
            "failure_kind": self.failure_kind,
            "annotation": self.annotation.to_dict(),
            "source_trace_id": self.source_trace_id,
            "score": self.score,
            "signals": [s.to_dict() for s in self.signals],
            "occurrences_in_log": self.occurrences_in_log,
            "duplicate_count": self.duplicate_count,
            "duplicate_trace_ids": list(self.duplicate_trace_ids),
            "self_check": self.self_check.to_dict(),
            "notes": list(self.notes),
        }
        if self.trace_checks:
            out["trace_checks"] = [c.to_dict() for c in self.trace_checks]
        if self.adjusted_checks:
            out["adjusted_checks"] = [a.to_dict() for a in self.adjusted_checks]
        if self.properties:
            out["properties"] = [p.to_dict() for p in self.properties]
        if self.baseline:
            out["baseline"] = {k: dict(v) for k, v in self.baseline.items()}
        if self.match is not None:
            out["match"] = self.match.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Case:
        """A case from a ``cases.jsonl`` object whose ``id``, ``checks`` and ``trace_checks``
        the caller has validated (``regression/run.load_cases``)."""
        text = data.get("input")
        source = data.get("source_trace_id")
        score = data.get("score", 0)
        signals = data.get("signals")
        found = [_signal(s) for s in signals] if isinstance(signals, list) else []
        adjusted = data.get("adjusted_checks")
        return cls(
            id=str(data["id"]),
            input=text if isinstance(text, str) else None,
            checks=tuple(Check.from_dict(c) for c in data.get("checks", [])),
            reference_output=str(data.get("reference_output") or ""),
            reference_is_trusted=bool(data.get("reference_is_trusted", True)),
            shape_source=str(data.get("shape_source") or ""),
            failure_kind=str(data.get("failure_kind") or FailureKind.NONE),
            annotation=CaseAnnotation.from_dict(data.get("annotation")),
            source_trace_id=str(source) if source is not None else None,
            score=score if isinstance(score, int | float) and not isinstance(score, bool) else 0,
            signals=tuple(s for s in found if s is not None),
            occurrences_in_log=_count(data.get("occurrences_in_log"), 1),
            duplicate_count=_count(data.get("duplicate_count"), 0),
            duplicate_trace_ids=_strings(data.get("duplicate_trace_ids")),
            self_check=SelfCheck.from_dict(data.get("self_check")),
            notes=_strings(data.get("notes")),
            trace_checks=tuple(Check.from_dict(c) for c in data.get("trace_checks", [])),
            adjusted_checks=tuple(Adjustment.from_dict(a) for a in adjusted if isinstance(a, dict))
            if isinstance(adjusted, list)
            else (),
            properties=_properties(data.get("properties")),
            baseline=_baseline(data.get("baseline")),
            match=CaseMatch.from_dict(data.get("match")),
        )


def _count(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _properties(value: object) -> tuple[Property, ...]:
    found = [Property.from_dict(p) for p in value] if isinstance(value, list) else []
    return tuple(p for p in found if p is not None)


def _baseline(value: object) -> Mapping[str, Mapping[str, float | int]] | None:
    if not isinstance(value, Mapping):
        return None
    out = {
        str(key): {
            str(k): v
            for k, v in figures.items()
            if isinstance(v, int | float) and not isinstance(v, bool)
        }
        for key, figures in value.items()
        if isinstance(figures, Mapping)
    }
    return out or None
