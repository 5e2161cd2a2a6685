"""Replay of a mined suite: each seed linked to its production traces, and a traffic-weighted view.

``spanguard run`` / ``spanguard fairness`` on a suite written by ``suite mine`` add
``production.md`` and ``production.json`` to the report folder: per seed, the requests it was
mined from and their trace ids (links with a trace-URL template). With traffic weights asked
for, each metric also gets a *traffic-weighted* gap beside the same figure unweighted: the
largest difference between two groups of the within-seed differences averaged over the seeds
(the gate's seed-adjusted gap), each seed weighted by its traffic share. It is report-only
and a different estimand: the gap an average production request would meet (seeds weighted
by how often their template is asked), not the suite's per-template average the gate tests;
it never changes a verdict.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..common.writes import write_text_atomic
from ..common.yamlio import load_bounded
from ..fairness.metrics import get_metric
from .suitefile import MINED_KEY

__all__ = [
    "MinedProvenance",
    "WeightedGap",
    "mined_provenance",
    "production_markdown",
    "traffic_weighted",
    "write_production",
]

_LINKS = 5
_SHOWN = 120  # characters of a template in production.md (production.json holds it whole)


@dataclass(frozen=True, slots=True)
class MinedProvenance:
    seed_id: str
    template: str
    requests: int
    traffic_share: float
    trace_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class WeightedGap:
    metric: str
    unweighted: float
    weighted: float
    seeds: int


def mined_provenance(path: Path) -> tuple[MinedProvenance, ...]:
    """The mined seeds of the (already validated) suite at ``path``; empty for other suites."""
    text = path.read_text(encoding="utf-8-sig")
    data = load_bounded(text) if path.suffix.lower() in {".yaml", ".yml"} else json.loads(text)
    entries = data.get("dataset", {}).get("variants") or data.get("dataset", {}).get("prompts")
    out = []
    for entry in entries or []:
        mined = (entry.get("metadata") or {}).get(MINED_KEY)
        if not isinstance(mined, Mapping):
            continue
        out.append(
            MinedProvenance(
                str(entry.get("seed_id") or entry.get("id")),
                str(mined.get("template", "")),
                int(mined.get("requests", 0)),
                float(mined.get("traffic_share", 0.0)),
                tuple(str(i) for i in mined.get("production_trace_ids", [])),
            )
        )
    return tuple(out)


def _seed_means(
    values: np.ndarray, valid: np.ndarray, seeds: Sequence[str], groups: Sequence[str]
) -> dict[str, dict[str, np.ndarray]]:
    """Per seed, per group: the mean of the metric's columns over its valid records."""
    cells: dict[tuple[str, str], list[np.ndarray]] = {}
    for row, ok in enumerate(valid):
        if ok:
            cells.setdefault((seeds[row], groups[row]), []).append(values[row])
    means: dict[str, dict[str, np.ndarray]] = {}
    for (seed, group), rows in sorted(cells.items()):
        means.setdefault(seed, {})[group] = np.mean(np.array(rows), axis=0)
    return means


def _gap(means: dict[str, dict[str, np.ndarray]], weight: Mapping[str, float]) -> float:
    """The largest seed-adjusted difference between two groups: for each pair, the weighted
    mean over the seeds holding both of their within-seed difference (any column)."""
    labels = sorted({g for groups in means.values() for g in groups})
    best = 0.0
    for i, a in enumerate(labels):
        for b in labels[i + 1 :]:
            pairs = [(weight[s], m[a] - m[b]) for s, m in means.items() if a in m and b in m]
            total = sum(w for w, _ in pairs)
            if total > 0:
                diff = sum(w * d for w, d in pairs) / total
                best = max(best, float(np.max(np.abs(diff))))
    return best


def traffic_weighted(
    evaluation: Any, suite: Any, provenance: Sequence[MinedProvenance]
) -> tuple[WeightedGap, ...]:
    """Each metric's seed-adjusted group gap, with every seed counted once and with seeds
    weighted by their traffic share."""
    weight = {p.seed_id: p.traffic_share for p in provenance}
    observations = evaluation.observations
    seeds = [o.seed_id for o in observations]
    groups = ["|".join(f"{k}={v}" for k, v in sorted(o.assignments.items())) for o in observations]
    out = []
    for config in suite.metrics:
        definition = get_metric(config.type)
        if definition is None:
            continue
        computed = definition.compute(observations, config.options)
        means = {
            s: m
            for s, m in _seed_means(computed.values, computed.valid, seeds, groups).items()
            if weight.get(s, 0.0) > 0 and len(m) > 1
        }
        if not means:
            continue
        unweighted = _gap(means, dict.fromkeys(means, 1.0))
        out.append(WeightedGap(config.type, unweighted, _gap(means, weight), len(means)))
    return tuple(out)


def production_markdown(
    provenance: Sequence[MinedProvenance],
    link: Callable[[str], str | None],
    weighted: Sequence[WeightedGap] = (),
    redact: bool = False,
) -> str:
    lines = [
        "# Production traffic behind the mined seeds",
        "",
        f"{len(provenance)} seed(s) mined from "
        f"{sum(p.requests for p in provenance)} production request(s).",
        "",
    ]
    if weighted:
        lines += [
            "## Traffic-weighted gaps (report-only; a different estimand)",
            "",
            "The largest seed-adjusted gap between two groups, each seed counted once and "
            "each seed weighted by its share of production traffic (the gap an average "
            "production request would meet). The gate tests the suite with every seed "
            "counted once; this never changes a verdict.",
            "",
            "| metric | unweighted | traffic-weighted | seeds |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {w.metric} | {w.unweighted:.4f} | {w.weighted:.4f} | {w.seeds} |" for w in weighted
        ]
        lines.append("")
    lines += [
        "| seed | requests | traffic share | template | production traces |",
        "|---|---|---|---|---|",
    ]
    for p in provenance:
        shown = []
        for trace_id in p.trace_ids[:_LINKS]:
            url = link(trace_id)
            shown.append(f"[{trace_id}]({url})" if url else f"`{trace_id}`")
        more = len(p.trace_ids) - _LINKS
        traces = ", ".join(shown) + (f" (+{more} more in production.json)" if more > 0 else "")
        text = p.template if len(p.template) <= _SHOWN else p.template[: _SHOWN - 1] + "…"
        template = "[redacted]" if redact else " ".join(text.split()).replace("|", "\\|")
        lines.append(
            f"| {p.seed_id} | {p.requests} | {p.traffic_share:.2%} | {template} | {traces} |"
        )
    return "\n".join(lines) + "\n"


def write_production(
    directory: Path,
    provenance: Sequence[MinedProvenance],
    link: Callable[[str], str | None],
    weighted: Sequence[WeightedGap] = (),
    redact: bool = False,
) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    write_text_atomic(
        directory / "production.md", production_markdown(provenance, link, weighted, redact)
    )
    payload = {
        "estimand_note": "traffic_weighted is report-only: seeds weighted by traffic share, "
        "a different estimand from the gate's",
        "traffic_weighted": [
            {
                "metric": w.metric,
                "unweighted": w.unweighted,
                "weighted": w.weighted,
                "seeds": w.seeds,
            }
            for w in weighted
        ],
        "seeds": [
            {
                "seed_id": p.seed_id,
                "requests": p.requests,
                "traffic_share": p.traffic_share,
                "template": "[redacted]" if redact else p.template,
                "production_trace_ids": list(p.trace_ids),
                "production_trace_links": [link(t) for t in p.trace_ids],
            }
            for p in provenance
        ],
    }
    write_text_atomic(
        directory / "production.json",
        json.dumps(payload, indent=2, sort_keys=True, allow_nan=False) + "\n",
    )
