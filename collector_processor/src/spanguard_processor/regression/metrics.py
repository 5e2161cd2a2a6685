"""A run's metrics as data: what ``cases run`` writes under ``metrics`` and ``check`` gates.

:meth:`Metrics.to_dict` writes trace2eval 0.5.1's keys in its order (then spanguard's trace-check
figures and ``skipped_output_lines`` when there are any, then ``failures``), so a run file's
``metrics`` stay byte-identical to trace2eval's for the same cases and outputs.
:meth:`Metrics.from_dict` reads them back from a file ``regression/runfile.load_run`` has
validated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

__all__ = ["Failure", "Metrics"]


@dataclass(frozen=True, slots=True)
class Failure:
    """A case that did not pass: ``missing_output``, or ``check_failed`` with its checks."""

    case_id: str
    reason: str
    failed_checks: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"case_id": self.case_id, "reason": self.reason,
                "failed_checks": list(self.failed_checks)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Failure:
        checks = data.get("failed_checks")
        return cls(str(data["case_id"]), str(data.get("reason", "")),
                   tuple(str(c) for c in checks) if isinstance(checks, list) else ())


@dataclass(frozen=True)
class Metrics:
    """trace2eval 0.5.1's run metrics, plus spanguard's trace-check figures (None when the run
    had no trace checks) and the count of unreadable outputs lines (None when there were
    none)."""

    total: int
    passed: int
    failed: int
    missing: int
    pass_rate: float
    fallback_count: int
    fallback_rate: float
    json_cases: int
    json_passed: int
    format_compliance_rate: float | None
    avg_latency_ms: float | None
    p95_latency_ms: float | None
    avg_cost_usd: float | None
    total_cost_usd: float | None
    avg_output_chars: float | None
    trace_check_cases: int | None = None
    trace_check_passed: int | None = None
    trace_compliance_rate: float | None = None
    trace_checks_unverified: int | None = None
    skipped_output_lines: int | None = None
    failures: tuple[Failure, ...] = ()

    def get(self, name: str) -> float | None:
        """A figure by its key (``pass_rate``, ``p95_latency_ms`` …); None when unrecorded or
        not a figure."""
        value = getattr(self, name, None) if name in _FIGURES else None
        return value if isinstance(value, int | float) else None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in _FIGURES:
            value = getattr(self, name)
            if value is not None or name not in _OPTIONAL:
                out[name] = value
        out["failures"] = [f.to_dict() for f in self.failures]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Metrics:
        """Metrics from a validated run file (every trace2eval key present, counts whole)."""
        values: dict[str, Any] = {name: data.get(name) for name in _FIGURES}
        failures = tuple(Failure.from_dict(f) for f in data.get("failures", []))
        return cls(**values, failures=failures)


_FIGURES = tuple(f.name for f in fields(Metrics) if f.name != "failures")
_OPTIONAL = frozenset(f.name for f in fields(Metrics) if f.default is None)
