"""Compare two fairness reports; a regression must clear both the threshold and the noise.

A metric regresses when (a) the candidate got worse, (b) the candidate is past its threshold,
and (c) the worsening is larger than the noise margin: ``z · sqrt(se_base² + se_cand²)``
with each standard error read off the report's interval (width / (2·z_level)), and never less
than ``tolerance``. A metric whose verdict gets worse also regresses: PASS to anything else
(INCONCLUSIVE or NO_SIGNAL is no improvement, whatever the scores say), anything to FAIL, and
any verdict to NO_SIGNAL (the candidate lost what the metric reads; its score measures
nothing). Reports from fairtrace 0.1.0 work too (their "confidence_interval" is a 90%
interval; their verdict is pass or fail from ``passed``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist
from typing import Any

from spanguard.exceptions import InputError

from ...common._json import parse_json
from ..vocabulary import Direction
from .verdict_text import label, number

__all__ = [
    "Comparison",
    "compare_reports",
    "load_report",
    "render_comparison_markdown",
    "signed",
    "suite_warnings",
    "verdicts_text",
]

_CATEGORIES = {
    "refusal_gap": "Text",
    "verbosity_gap": "Text",
    "counterfactual_stability": "Text",
    "helpfulness_gap": "Text",
    "toxicity_gap": "Text",
    "retrieval_exposure_gap": "RAG",
    "retrieval_exposure_gap_legacy": "RAG",
    "tool_use_parity": "Agent",
    "plan_length_gap": "Agent",
    "escalation_parity": "Agent",
    "friction_point_gap": "Agent",
    "escalation_reason_parity": "Agent",
    "tool_count_gap": "Agent",
    "tool_name_gap": "Agent",
    "tool_sequence_gap": "Agent",
    "llm_call_gap": "Agent",
    "token_gap": "Agent",
}


@dataclass(frozen=True)
class Comparison:
    rows: tuple[dict[str, Any], ...]
    groups: dict[str, dict[str, list[str]]]
    warnings: tuple[str, ...] = ()

    @property
    def regressed(self) -> list[str]:
        return [r["metric"] for r in self.rows if r.get("regressed")]

    def to_dict(self) -> dict[str, Any]:
        return {
            "metrics": list(self.rows),
            "groups": self.groups,
            "regressed": self.regressed,
            "warnings": list(self.warnings),
        }


def _suite_of(report: dict[str, Any]) -> tuple[str, int | None]:
    """The suite a report was run on: its sha256 ("" when the report does not say, as
    fairtrace's do not) and its seed count."""
    block = report.get("spanguard")
    if not isinstance(block, dict):
        return "", None
    digest = block.get("suite_sha256")
    seeds = block.get("seeds")
    return (
        digest if isinstance(digest, str) else "",
        seeds if isinstance(seeds, int) and not isinstance(seeds, bool) else None,
    )


def suite_warnings(base: dict[str, Any], cand: dict[str, Any]) -> tuple[str, ...]:
    """A warning when the two reports come from different suites: their scores measure
    different prompts, so a difference between them is not the app's."""
    (left, left_seeds), (right, right_seeds) = _suite_of(base), _suite_of(cand)
    if not left or not right or left == right:
        return ()
    seeds = (
        f", {left_seeds} vs {right_seeds} seeds"
        if left_seeds is not None and right_seeds is not None and left_seeds != right_seeds
        else ""
    )
    return (
        f"the two reports come from different suites (suite sha256 {left[:12]} vs "
        f"{right[:12]}{seeds}): their scores measure different prompts, so a change may be the "
        "suite's, not the app's; compare two runs of one suite.",
    )


def load_report(path: Path) -> dict[str, Any]:
    """A report.json, given as the file or the directory holding it, or a run history entry
    (``history.jsonl``, ``history.jsonl@-2``)."""
    from .history import is_history_reference, report_from_history

    if is_history_reference(path):
        return report_from_history(path)
    target = path / "report.json" if path.is_dir() else path
    try:
        data = parse_json(target.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot be read: {exc.strerror or exc}.", file=str(target)) from None
    except ValueError as exc:
        raise InputError(f"is not valid JSON: {exc}.", file=str(target)) from None
    if not isinstance(data, dict) or not isinstance(data.get("metric_results"), list):
        raise InputError(
            "is not a fairness report: it has no metric_results list.",
            file=str(target),
            field="metric_results",
        )
    for i, item in enumerate(data["metric_results"]):
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("metric"), str)
            or not (
                isinstance(item.get("score"), int | float)
                or (item.get("score") is None and item.get("verdict") == "no_signal")
            )
        ):
            raise InputError(
                "each metric result needs a metric name and a numeric score "
                "(null only when its verdict is no_signal).",
                file=str(target),
                field=f"metric_results[{i}]",
            )
    return data


def _se(item: dict[str, Any]) -> float:
    ci = item.get("confidence_interval")
    if not isinstance(ci, list) or len(ci) != 2 or not all(isinstance(v, int | float) for v in ci):
        return 0.0
    level = item.get("interval_level", 0.90)
    z = NormalDist().inv_cdf(0.5 + float(level) / 2.0)
    return abs(float(ci[1]) - float(ci[0])) / (2.0 * z)


_RANK = {"pass": 0, "inconclusive": 1, "no_signal": 1, "insufficient_data": 1, "fail": 2}


def _score(item: dict[str, Any]) -> float | None:
    score = item.get("score")
    return float(score) if isinstance(score, int | float) else None


def _verdict(item: dict[str, Any]) -> str:
    """The metric's verdict: spanguard's ``verdict``, else (fairtrace) pass or fail from
    ``passed``."""
    verdict = item.get("verdict")
    if isinstance(verdict, str) and verdict and verdict != "pending":
        return verdict.lower()
    return "pass" if item.get("passed") else "fail"


def _verdict_change(before: str, after: str) -> str:
    """Why a verdict change regresses ("" when it does not): losing a PASS, losing the
    signal, or reaching FAIL. A PASS that became INCONCLUSIVE or NO_SIGNAL is never an
    improvement, whatever the scores say."""
    if before == after or "report_only" in (before, after):  # stability: never gating
        return ""
    if after == "no_signal":
        return f"verdict went from {label(before)} to NO_SIGNAL: the candidate lost the signal"
    if before == "pass" or _RANK.get(after, 1) > _RANK.get(before, 1):
        return f"verdict went from {label(before)} to {label(after)}"
    return ""


def _row(
    name: str, base: dict[str, Any], cand: dict[str, Any], tolerance: float, z: float
) -> dict[str, Any]:
    direction = cand.get("direction", base.get("direction", Direction.LOWER))
    threshold = float(cand.get("threshold", base.get("threshold", 0.0)))
    before, after = _verdict(base), _verdict(cand)
    # a score without signal is no measurement: shown as none, it can neither worsen nor improve
    b = None if before == "no_signal" else _score(base)
    c = None if after == "no_signal" else _score(cand)
    delta = None if b is None or c is None else c - b
    lower = direction == Direction.LOWER
    worsening = 0.0 if delta is None else max(0.0, delta if lower else -delta)
    past = c is not None and (c > threshold if lower else c < threshold)
    margin = max(tolerance, z * math.hypot(_se(base), _se(cand)))
    flipped = _verdict_change(before, after)
    regressed = (worsening > margin and past) or bool(flipped)
    reason = (
        flipped
        if flipped
        else "worse by more than noise and past the threshold"
        if regressed
        else "no signal in either report"
        if before == after == "no_signal"
        else f"verdict went from {label(before)} to {label(after)}"
        if before != after
        else "within noise"
        if (worsening > 0 and not past) or worsening <= margin
        else ""
    )
    return {
        "metric": name,
        "direction": direction,
        "threshold": threshold,
        "baseline_score": b,
        "candidate_score": c,
        "delta": delta,
        "severity": worsening,
        "noise_margin": margin,
        "regressed": regressed,
        "baseline_passed": base.get("passed"),
        "candidate_passed": cand.get("passed"),
        "baseline_verdict": before,
        "candidate_verdict": after,
        "reason": reason,
    }


def compare_reports(
    base: dict[str, Any], cand: dict[str, Any], *, tolerance: float = 0.0, z: float = 1.96
) -> Comparison:
    left = {m["metric"]: m for m in base["metric_results"]}
    right = {m["metric"]: m for m in cand["metric_results"]}
    rows: list[dict[str, Any]] = []
    groups: dict[str, dict[str, list[str]]] = {
        g: {"regressed": [], "stable": [], "missing": []} for g in ("Text", "RAG", "Agent", "Other")
    }
    for name in sorted(set(left) | set(right)):
        category = (right.get(name) or left.get(name) or {}).get(
            "category", _CATEGORIES.get(name, "Other")
        )
        bucket = groups.get(category, groups["Other"])
        if name not in left or name not in right:
            rows.append({"metric": name, "status": "missing"})
            bucket["missing"].append(name)
            continue
        row = _row(name, left[name], right[name], tolerance, z)
        rows.append(row)
        bucket["regressed" if row["regressed"] else "stable"].append(name)
    rows.sort(
        key=lambda r: (
            0 if r.get("regressed") else 2 if r.get("status") == "missing" else 1,
            -r.get("severity", 0.0) if r.get("regressed") else -abs(r.get("delta") or 0.0),
            r["metric"],
        )
    )
    return Comparison(tuple(rows), groups, suite_warnings(base, cand))


def signed(value: float | None) -> str:
    """``+0.1200``, or an en dash when either report had no score."""
    return "–" if value is None else f"{value:+.4f}"


def verdicts_text(row: dict[str, Any]) -> str:
    """``PASS`` when the verdict stayed, ``PASS → INCONCLUSIVE`` when it changed."""
    before, after = label(row["baseline_verdict"]), label(row["candidate_verdict"])
    return before if before == after else f"{before} → {after}"


def render_comparison_markdown(comparison: Comparison) -> str:
    lines = [
        "# spanguard fairness comparison",
        "",
        "| Metric | Baseline | Candidate | Delta | Noise margin | Verdict | Status |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    lines[2:2] = [line for w in comparison.warnings for line in (f"> ⚠️ {w}", "")]
    for r in comparison.rows:
        if r.get("status") == "missing":
            lines.append(f"| {r['metric']} | – | – | – | – | – | missing |")
            continue
        status = "❌ regressed" if r["regressed"] else "✅ ok"
        lines.append(
            f"| {r['metric']} | {number(r['baseline_score'])} | "
            f"{number(r['candidate_score'])} | {signed(r['delta'])} | "
            f"{number(r['noise_margin'])} | {verdicts_text(r)} | {status} |"
        )
    return "\n".join(lines) + "\n"
