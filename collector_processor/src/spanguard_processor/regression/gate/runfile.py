"""Reading a run result for ``check``: validated, or rejected with the file and field named.

``check`` reads only what ``spanguard cases run`` writes (``producer: "spanguard cases run"``,
with every case's outcome) or what trace2eval 0.5.1's ``run`` writes (``{"version",
"metrics"}``). Anything else — ``{}``, a fairness ``report.json``, a truncated file, metrics that
contradict themselves — is bad input (exit 2), never a silent pass.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spanguard.exceptions import CaseFormatError

from ...common._json import parse_json
from ..case import Property
from ..run.repeats import Repeat
from ..run.results import CaseOutcome, Metrics
from ..run.run import PRODUCER, RunResult
from ..vocabulary import Outcome, Producer

__all__ = ["OUTCOMES", "REQUIRED_METRICS", "RunFile", "load_run", "run_file"]

OUTCOMES = frozenset(Outcome)
#: Every key trace2eval 0.5.1's ``run`` writes under ``metrics`` (spanguard writes them too).
REQUIRED_METRICS = (
    "total",
    "passed",
    "failed",
    "missing",
    "pass_rate",
    "fallback_count",
    "fallback_rate",
    "json_cases",
    "json_passed",
    "format_compliance_rate",
    "avg_latency_ms",
    "p95_latency_ms",
    "avg_cost_usd",
    "total_cost_usd",
    "avg_output_chars",
    "failures",
)
_COUNTS = ("total", "passed", "failed", "missing", "fallback_count", "json_cases", "json_passed")
_NULLABLE = (
    "format_compliance_rate",
    "avg_latency_ms",
    "p95_latency_ms",
    "avg_cost_usd",
    "total_cost_usd",
    "avg_output_chars",
    "trace_compliance_rate",
)
_HOW = (
    "`check` compares two run results written by `spanguard cases run -o FILE` "
    "(or trace2eval 0.5.1's `run -o FILE`)"
)


@dataclass(frozen=True)
class RunFile:
    """One validated run result.

    ``case_results`` and ``case_details`` are None for a trace2eval file (it records only the
    failures); ``failed_checks`` maps every failing case id to its failed check types.
    """

    path: str
    metrics: Metrics
    case_results: dict[str, str] | None
    case_details: dict[str, CaseOutcome] | None
    failed_checks: dict[str, list[str]]
    #: Every case's repeats (contract C2); empty for a trace2eval file or an older run file.
    repeats: Mapping[str, tuple[Repeat, ...]] = field(default_factory=dict)
    #: The properties of the cases that carry them (contract C1), in the repeats' order.
    properties: Mapping[str, tuple[Property, ...]] = field(default_factory=dict)

    @property
    def producer(self) -> str:
        return Producer.SPANGUARD if self.case_results is not None else Producer.TRACE2EVAL

    def per_case(self, key: str) -> dict[str, float]:
        """A per-case figure (``latency_ms``, ``cost_usd``) for the cases that recorded one."""
        found: dict[str, float] = {}
        for case_id, outcome in (self.case_details or {}).items():
            value = getattr(outcome, key, None)
            if isinstance(value, float):
                found[case_id] = value
        return found


def _no_duplicates(name: str) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in pairs]
        repeated = sorted({k for k in keys if keys.count(k) > 1})
        if repeated:
            raise CaseFormatError(
                f"repeats the key {repeated[0]!r}; every case id and metric must appear once.",
                file=name,
            )
        return dict(pairs)

    return hook


def _read(path: Path) -> object:
    name = path.as_posix()
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise CaseFormatError("does not exist.", file=name) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CaseFormatError(f"cannot be read: {exc}.", file=name) from None
    if not text.strip():
        raise CaseFormatError(f"is empty; {_HOW}.", file=name)
    try:
        return parse_json(text, object_pairs_hook=_no_duplicates(name))
    except json.JSONDecodeError as exc:
        hint = " (the file looks truncated)" if exc.pos >= len(text.rstrip()) else ""
        raise CaseFormatError(
            f"is not valid JSON{hint}: {exc.msg} at column {exc.colno}.", file=name, line=exc.lineno
        ) from None


def _not_a_run(payload: dict[str, Any]) -> str:
    """What the file looks like instead, when we can tell."""
    if "metric_results" in payload or "suite" in payload:
        return " This looks like a fairness report (report.json), not a regression run."
    if "id" in payload and "checks" in payload:
        return " This looks like a regression case, not a run result."
    return ""


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _metrics(name: str, payload: dict[str, Any]) -> dict[str, Any]:
    if "metrics" not in payload:
        raise CaseFormatError(
            f"is missing; {_HOW}, which hold 'version' and 'metrics'.{_not_a_run(payload)}",
            file=name,
            field="metrics",
        )
    if not isinstance(payload.get("version"), str):
        raise CaseFormatError(
            f'must be the format version string ("0.5.1"); {_HOW}.', file=name, field="version"
        )
    metrics = payload["metrics"]
    if not isinstance(metrics, dict):
        raise CaseFormatError("must be an object of metrics.", file=name, field="metrics")
    for key in REQUIRED_METRICS:
        if key not in metrics:
            raise CaseFormatError(f"is missing; {_HOW}.", file=name, field=f"metrics.{key}")
    for key in _COUNTS:
        value = metrics[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise CaseFormatError(
                f"must be a whole number ≥ 0, got {value!r}.", file=name, field=f"metrics.{key}"
            )
    for key in ("pass_rate", "fallback_rate", *_NULLABLE):
        value = metrics.get(key)
        if value is None and key in _NULLABLE:
            continue
        if not _finite(value) or value is None or value < 0:
            raise CaseFormatError(
                f"must be a finite number ≥ 0{' or null' if key in _NULLABLE else ''}, "
                f"got {value!r}.",
                file=name,
                field=f"metrics.{key}",
            )
    return metrics


def _failures(name: str, metrics: dict[str, Any]) -> dict[str, list[str]]:
    failures = metrics["failures"]
    if not isinstance(failures, list):
        raise CaseFormatError("must be a list.", file=name, field="metrics.failures")
    found: dict[str, list[str]] = {}
    for index, item in enumerate(failures):
        where = f"metrics.failures[{index}]"
        if not isinstance(item, dict) or not isinstance(item.get("case_id"), str):
            raise CaseFormatError(
                "must be an object with a string 'case_id'.", file=name, field=where
            )
        checks = item.get("failed_checks", [])
        if not isinstance(checks, list):
            raise CaseFormatError("must be a list.", file=name, field=f"{where}.failed_checks")
        found[item["case_id"]] = [str(c) for c in checks]
    return found


def _consistent(name: str, metrics: dict[str, Any], failed: dict[str, list[str]]) -> None:
    total, passed = metrics["total"], metrics["passed"]
    if passed + metrics["failed"] != total:
        raise CaseFormatError(
            f"passed ({passed}) + failed ({metrics['failed']}) must equal total ({total}).",
            file=name,
            field="metrics.total",
        )
    if metrics["missing"] > metrics["failed"]:
        raise CaseFormatError(
            f"({metrics['missing']}) cannot exceed failed ({metrics['failed']}).",
            file=name,
            field="metrics.missing",
        )
    if len(failed) != metrics["failed"]:
        raise CaseFormatError(
            f"lists {len(failed)} case(s) but metrics.failed is {metrics['failed']}.",
            file=name,
            field="metrics.failures",
        )


def _case_results(
    name: str, payload: dict[str, Any], metrics: dict[str, Any], failed: dict[str, list[str]]
) -> dict[str, str]:
    results = payload.get("case_results")
    if not isinstance(results, dict):
        raise CaseFormatError(
            "must be an object of case id to pass/fail/missing (written by `cases run`).",
            file=name,
            field="case_results",
        )
    for case_id, outcome in results.items():
        if outcome not in OUTCOMES:
            raise CaseFormatError(
                f"must be one of pass, fail, missing; got {outcome!r}.",
                file=name,
                field=f"case_results.{case_id}",
            )
    if len(results) != metrics["total"]:
        raise CaseFormatError(
            f"holds {len(results)} case(s) but metrics.total is {metrics['total']}.",
            file=name,
            field="case_results",
        )
    bad = sorted(c for c, o in results.items() if (o != Outcome.PASS) != (c in failed))
    if bad:
        raise CaseFormatError(
            f"disagrees with metrics.failures about case {bad[0]!r}.",
            file=name,
            field="case_results",
        )
    return results


def _details(name: str, payload: dict[str, Any]) -> dict[str, CaseOutcome] | None:
    details = payload.get("case_details")
    if details is None:
        return None
    if not isinstance(details, dict) or not all(isinstance(d, dict) for d in details.values()):
        raise CaseFormatError(
            "must be an object of case id to an object.", file=name, field="case_details"
        )
    return {case_id: CaseOutcome.from_dict(case_id, d) for case_id, d in details.items()}


def load_run(path: Path) -> RunFile:
    """A run result written by ``spanguard cases run`` or trace2eval 0.5.1, validated."""
    name = path.as_posix()
    payload = _read(path)
    if not isinstance(payload, dict):
        raise CaseFormatError(f"must hold a JSON object; {_HOW}.", file=name)
    metrics = _metrics(name, payload)
    failed = _failures(name, metrics)
    _consistent(name, metrics, failed)
    producer = payload.get("producer")
    if producer is not None and producer != PRODUCER:
        raise CaseFormatError(
            f"must be {PRODUCER!r}, got {producer!r}.", file=name, field="producer"
        )
    results: dict[str, str] | None = None
    if producer is not None or "case_results" in payload:
        results = _case_results(name, payload, metrics, failed)
    return RunFile(
        name,
        Metrics.from_dict(metrics),
        results,
        _details(name, payload),
        failed,
        _repeats(name, payload),
        _properties(name, payload),
    )


def _object_of_lists(name: str, payload: dict[str, Any], key: str) -> dict[str, list[Any]]:
    value = payload.get(key, {})
    ok = isinstance(value, dict) and all(
        isinstance(v, list) and all(isinstance(x, dict) for x in v) for v in value.values()
    )
    if not ok:
        raise CaseFormatError(
            "must be an object of case id to a list of objects (written by `cases run`).",
            file=name,
            field=key,
        )
    return value


def _repeats(name: str, payload: dict[str, Any]) -> dict[str, tuple[Repeat, ...]]:
    raw = _object_of_lists(name, payload, "repeats")
    return {case_id: tuple(Repeat.from_dict(r) for r in runs) for case_id, runs in raw.items()}


def _properties(name: str, payload: dict[str, Any]) -> dict[str, tuple[Property, ...]]:
    raw = _object_of_lists(name, payload, "properties")
    found: dict[str, tuple[Property, ...]] = {}
    for case_id, props in raw.items():
        read = [Property.from_dict(p) for p in props]
        found[case_id] = tuple(p for p in read if p is not None)
    return found


def run_file(result: RunResult, path: str = "<in memory>") -> RunFile:
    """What :func:`load_run` reads back from ``result.to_json()``, without the file: for
    callers that score and gate in one process (the bench, the replay harness)."""
    failed = {f.case_id: list(f.failed_checks) for f in result.metrics.failures}
    return RunFile(
        path,
        result.metrics,
        result.case_results,
        {o.case_id: o for o in result.outcomes},
        failed,
        dict(result.repeats),
        dict(result.properties),
    )
