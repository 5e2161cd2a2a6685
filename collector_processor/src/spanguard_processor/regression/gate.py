"""``check``: compare two metrics files with trace2eval's tolerances, and more.

Rules (trace2eval 0.5.1's; docs/regression.md):
``pass_rate`` and ``format_compliance_rate`` may drop by 0.02,
``fallback_rate`` may rise by 0.02, ``p95_latency_ms`` and ``avg_cost_usd`` may rise by 20 %
of the baseline; each allowance is multiplied by ``--tolerance-scale``; a regression is a
strict excess. Added: ``trace_compliance_rate`` (0.02), a shrinking ``total``, a rising
``missing`` count, case ids of the baseline absent from the current run, and **any case that
passed on the baseline and now fails a content or process check** (a per-case regression that
an aggregate pass rate can hide when other cases happen to improve). A case whose only failed
checks are timing or cost limits (``max_latency_ms``, ``max_cost_usd``) is listed but left to
the p95-latency and cost tolerances: one request's time is noise, the distribution is not.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spanguard.exceptions import CaseFormatError, ConfigError

__all__ = ["RULES", "TIMING_CHECKS", "Comparison", "Violation", "compare", "load_metrics"]

TIMING_CHECKS = frozenset({"max_latency_ms", "max_cost_usd"})

RULES: tuple[tuple[str, bool, float, bool], ...] = (
    # metric, higher is better, allowance, allowance relative to the baseline
    ("pass_rate", True, 0.02, False),
    ("format_compliance_rate", True, 0.02, False),
    ("fallback_rate", False, 0.02, False),
    ("p95_latency_ms", False, 0.20, True),
    ("avg_cost_usd", False, 0.20, True),
    ("trace_compliance_rate", True, 0.02, False),
)
_NUMERIC = (
    "total",
    "passed",
    "failed",
    "missing",
    "pass_rate",
    "fallback_rate",
    "format_compliance_rate",
    "avg_latency_ms",
    "p95_latency_ms",
    "avg_cost_usd",
    "trace_compliance_rate",
)


@dataclass(frozen=True, slots=True)
class Violation:
    metric: str
    baseline: Any
    current: Any
    rule: str


@dataclass(frozen=True)
class Metrics:
    path: str
    values: dict[str, Any]
    case_results: dict[str, str] | None


def _no_duplicates(name: str) -> Any:
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


def load_metrics(path: Path) -> Metrics:
    """A metrics file (``{"metrics": {...}}`` or the bare metrics object), validated."""
    name = path.as_posix()
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise CaseFormatError(f"cannot be read: {exc}.", file=name) from None
    try:
        payload = json.loads(text, object_pairs_hook=_no_duplicates(name))
    except json.JSONDecodeError as exc:
        raise CaseFormatError(
            f"is not valid JSON: {exc.msg}.", file=name, line=exc.lineno
        ) from None
    if not isinstance(payload, dict):
        raise CaseFormatError("must hold a JSON object of metrics.", file=name)
    metrics = payload.get("metrics", payload)
    if not isinstance(metrics, dict):
        raise CaseFormatError("must be an object of metrics.", file=name, field="metrics")
    for key in _NUMERIC:
        value = metrics.get(key)
        if value is not None and (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise CaseFormatError(
                f"must be a finite number or null, got {value!r}.",
                file=name,
                field=f"metrics.{key}",
            )
    results = payload.get("case_results")
    if results is not None and not isinstance(results, dict):
        raise CaseFormatError(
            "must be an object of case id to outcome.", file=name, field="case_results"
        )
    return Metrics(name, metrics, results)


def _failed_checks(metrics: dict[str, Any]) -> dict[str, list[str]]:
    failures = metrics.get("failures")
    found: dict[str, list[str]] = {}
    if isinstance(failures, list):
        for item in failures:
            if isinstance(item, dict) and isinstance(item.get("failed_checks"), list):
                found[str(item.get("case_id"))] = [str(c) for c in item["failed_checks"]]
    return found


def _behavioural(pass_to_fail: list[str], now: dict[str, str],
                 failed: dict[str, list[str]]) -> list[str]:
    """The flipped cases that are not explained by timing or cost alone."""
    out = []
    for case_id in pass_to_fail:
        checks = set(failed.get(case_id, ()))
        if now[case_id] != "fail" or not checks or not checks <= TIMING_CHECKS:
            out.append(case_id)
    return out


@dataclass(frozen=True)
class Comparison:
    violations: list[Violation]
    pass_to_fail: list[str]
    missing_cases: list[str]
    fail_to_pass: list[str]


def _rules(base: dict[str, Any], cur: dict[str, Any], scale: float) -> list[Violation]:
    found: list[Violation] = []
    for metric, higher, allowance, relative in RULES:
        b, c = base.get(metric), cur.get(metric)
        if b is None or c is None:
            continue
        allowed = allowance * scale * (b if relative else 1)
        if higher and c < b - allowed:
            found.append(Violation(metric, b, c, f"dropped by {b - c:.4f} (allowed {allowed:.4f})"))
        elif not higher and c > b + allowed:
            found.append(Violation(metric, b, c, f"rose by {c - b:.4f} (allowed {allowed:.4f})"))
    return found


def compare(baseline: Metrics, current: Metrics, scale: float = 1.0) -> Comparison:
    if not math.isfinite(scale) or scale < 0:
        raise ConfigError("--tolerance-scale", f"must be a finite number ≥ 0, got {scale}.")
    base, cur = baseline.values, current.values
    found = _rules(base, cur, scale)
    if (
        isinstance(base.get("total"), int)
        and isinstance(cur.get("total"), int)
        and cur["total"] < base["total"]
    ):
        found.append(
            Violation(
                "total",
                base["total"],
                cur["total"],
                f"fewer cases ran ({base['total'] - cur['total']} gone)",
            )
        )
    if (
        isinstance(base.get("missing"), int)
        and isinstance(cur.get("missing"), int)
        and cur["missing"] > base["missing"]
    ):
        found.append(
            Violation(
                "missing",
                base["missing"],
                cur["missing"],
                f"rose by {cur['missing'] - base['missing']} (allowed 0)",
            )
        )
    pass_to_fail: list[str] = []
    fail_to_pass: list[str] = []
    gone: list[str] = []
    if baseline.case_results is not None and current.case_results is not None:
        now = current.case_results
        for case_id, outcome in baseline.case_results.items():
            if case_id not in now:
                gone.append(case_id)
            elif outcome == "pass" and now[case_id] != "pass":
                pass_to_fail.append(case_id)
            elif outcome != "pass" and now[case_id] == "pass":
                fail_to_pass.append(case_id)
        flipped = _behavioural(pass_to_fail, now, _failed_checks(cur))
        if flipped:
            found.append(
                Violation(
                    "case_outcomes",
                    len(pass_to_fail),
                    len(flipped),
                    f"{len(flipped)} case(s) passed before and now fail a content or process "
                    f"check: {', '.join(flipped[:5])}" + (" …" if len(flipped) > 5 else ""),
                )
            )
        if gone:
            found.append(
                Violation(
                    "case_ids",
                    len(baseline.case_results),
                    len(now),
                    f"{len(gone)} baseline case id(s) missing: {', '.join(gone[:5])}",
                )
            )
    return Comparison(found, pass_to_fail, gone, fail_to_pass)
