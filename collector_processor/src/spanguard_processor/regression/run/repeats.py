"""Repeats: every run of a case kept, so the gate can weigh a case's own variability.

A case run K times (``cases run --app … --repeats K``), or matched by several recorded requests
(``cases run --traces/--outputs``: the requests of its cluster), has K *repeats*.
:class:`Repeat` is what the run file keeps of one (contract C2): its outcome, its failed checks,
whether each of the case's properties held, latency, cost, tool count, plan steps, the error
when the app call raised (:class:`AppFailure`), and — for a recorded request — which input it
answered (:func:`request_key`), so that ``check`` can pair the same request across two runs.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..case import Case, Check, Evidence
from ..checks import check_type

__all__ = ["ERROR", "AppFailure", "Repeat", "property_held", "repeat_of", "request_key"]

#: The outcome of a repeat whose app call raised (besides ``pass`` and ``fail``).
ERROR = "error"


@dataclass(frozen=True, slots=True)
class AppFailure:
    """An app call that raised: the exception's type name and message."""

    type: str
    message: str

    @classmethod
    def of(cls, exc: BaseException) -> AppFailure:
        return cls(type(exc).__name__, str(exc))

    def to_dict(self) -> dict[str, str]:
        return {"type": self.type, "message": self.message}


def request_key(text: str | None) -> str | None:
    """Which input a recorded request answered: the first 16 hex digits of SHA-256 over its
    text (the run file keeps no question text); None without one."""
    if text is None or not text.strip():
        return None
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def property_held(check: Check, evidence: Evidence) -> bool | None:
    """Whether one property's check held on one run: None when the run lacks what it reads or
    the kind is unknown (any kind in the CheckType registry runs, with no special case)."""
    ct = check_type(check.type)
    if ct is None:
        return None
    return ct.run(ct, check, evidence).passed


@dataclass(frozen=True, slots=True)
class Repeat:
    """One run of a case. ``outcome`` is ``pass``, ``fail`` or ``error``; ``properties`` holds,
    in the order of the case's ``properties``, whether each held (None: not recorded);
    ``tool_count``/``plan_steps``/``escalated`` are None when the run recorded no process;
    ``request`` is the :func:`request_key` of a recorded request's input (None for a replay,
    whose repeats all answer the case's own input)."""

    outcome: str
    failed_checks: tuple[str, ...] = ()
    properties: tuple[bool | None, ...] = ()
    latency_ms: float | None = None
    cost_usd: float | None = None
    tool_count: int | None = None
    plan_steps: int | None = None
    tools: tuple[str, ...] = ()
    escalated: bool | None = None
    error: AppFailure | None = None
    request: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "outcome": self.outcome,
            "failed_checks": list(self.failed_checks),
            "properties": list(self.properties),
            "latency_ms": self.latency_ms,
            "cost_usd": self.cost_usd,
            "tool_count": self.tool_count,
            "plan_steps": self.plan_steps,
            "tools": list(self.tools),
            "escalated": self.escalated,
            "error": self.error.to_dict() if self.error is not None else None,
            "request": self.request,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Repeat:
        """A repeat from a run file; a field of the wrong type reads as absent."""
        error = data.get("error")
        props = data.get("properties")
        return cls(
            str(data.get("outcome", "")),
            _texts(data.get("failed_checks")),
            tuple(p if isinstance(p, bool) else None for p in props)
            if isinstance(props, list)
            else (),
            _finite(data.get("latency_ms")),
            _finite(data.get("cost_usd")),
            _whole(data.get("tool_count")),
            _whole(data.get("plan_steps")),
            _texts(data.get("tools")),
            esc if isinstance(esc := data.get("escalated"), bool) else None,
            AppFailure(str(error.get("type", "")), str(error.get("message", "")))
            if isinstance(error, Mapping)
            else None,
            req if isinstance(req := data.get("request"), str) and req else None,
        )


def repeat_of(
    case: Case, run: Evidence | AppFailure, failed: Sequence[str], request: str | None = None
) -> Repeat:
    """What the run file keeps of one run of ``case`` (``failed``: its failed checks;
    ``request``: the recorded request's :func:`request_key`)."""
    if isinstance(run, AppFailure):
        return Repeat(ERROR, error=run)
    process = run.process
    return Repeat(
        "fail" if failed else "pass",
        tuple(failed),
        tuple(property_held(p.check, run) for p in case.properties),
        _finite(run.latency_ms),
        _finite(run.cost_usd),
        len(process.tool_calls) if process is not None else None,
        len(process.plan_steps) if process is not None else None,
        tuple(t.name for t in process.tool_calls) if process is not None else (),
        process.escalated if process is not None else None,
        request=request,
    )


def _texts(value: object) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def _whole(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _finite(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None
