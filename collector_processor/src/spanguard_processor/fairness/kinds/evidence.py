"""Counterfactual evidence: the seeds behind a metric's gap, each as its variants side by side.

The groups that define a gap are the ones with the highest and the lowest seed-adjusted mean
in the column with the largest gap (the same estimate the report shows). Within every seed the
groups present nearest those two ends are compared (exactly those two when the seed holds
them), and the seeds whose within-seed difference is largest contribute most to the gap. The
cost is a few ``bincount`` passes over the records and a top-k; only the chosen records' traces
are read, so evidence stays cheap on a million records.

Content privacy: a record recorded with content capture off carries no prompt or response
here, only its signals and ids.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...traces.model import ProcessTrace
from ..gate.results import CounterfactualPair, Variant
from ..metrics import MetricValues
from ..records import Observation

__all__ = [
    "PAIRS",
    "find_pairs",
    "process_signals",
    "prompt_segments",
    "stability_pairs",
]

#: how many seeds' pairs each metric keeps
PAIRS = 3
_PROMPT_CHARS = 2_000
_RESPONSE_CHARS = 280
_EPS = 1e-12
_STABILITY_VARIANTS = 300  # a seed's first 300 variants are searched for its least similar two
SIGNAL_NAMES = (
    "escalated",
    "escalation_reason",
    "friction_points",
    "tool_calls",
    "plan_steps",
    "retrieved_documents",
)


def process_signals(trace: ProcessTrace | None) -> dict[str, Any] | None:
    """The content-free signals of a trace, in a fixed order (None without a trace)."""
    if trace is None:
        return None
    return {
        "escalated": trace.escalated,
        "escalation_reason": trace.escalation_reason,
        "friction_points": list(trace.friction_points),
        "tool_calls": [t.name for t in trace.tool_calls],
        "plan_steps": list(trace.plan_steps),
        "retrieved_documents": [
            {"id": d.id, "group": d.group, "rank": d.rank if d.rank is not None else i}
            for i, d in enumerate(trace.retrieved_documents, start=1)
        ],
    }


def _excerpt(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


_TOKEN = re.compile(r"\s+|[^\s]+")


def prompt_segments(a: str, b: str) -> tuple[list[tuple[str, bool]], list[tuple[str, bool]]]:
    """Both prompts as ``(text, changed)`` runs, word by word: the changed runs are the
    attribute words that make the two variants differ."""
    ta, tb = _TOKEN.findall(a), _TOKEN.findall(b)
    out_a: list[tuple[str, bool]] = []
    out_b: list[tuple[str, bool]] = []
    matcher = difflib.SequenceMatcher(None, ta, tb, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        changed = op != "equal"
        if i2 > i1:
            out_a.append(("".join(ta[i1:i2]), changed))
        if j2 > j1:
            out_b.append(("".join(tb[j1:j2]), changed))
    return out_a, out_b


# --- which seeds -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Ends:
    column: int
    means: NDArray[np.float64]  # per group; NaN where a group holds no contrast data
    sums: NDArray[np.float64]  # seeds × groups, the column's per-seed group sums
    counts: NDArray[np.int64]  # seeds × groups


def _ends(
    x: NDArray[np.float64],
    seed: NDArray[np.int64],
    group: NDArray[np.int64],
    n_seeds: int,
    n_groups: int,
) -> _Ends | None:
    """The column with the largest gap of within-seed-adjusted group means."""
    cell = seed * n_groups + group
    counts = np.bincount(cell, minlength=n_seeds * n_groups).reshape(n_seeds, n_groups)
    per_seed = counts.sum(axis=1)
    contrast = (counts > 0).sum(axis=1) >= 2
    keep = contrast[seed]
    n_g = np.bincount(group[keep], minlength=n_groups)
    has = n_g > 0
    if int(has.sum()) < 2:
        return None
    best: _Ends | None = None
    best_gap = _EPS
    for c in range(x.shape[1]):
        col = x[:, c]
        sums = np.asarray(
            np.bincount(cell, weights=col, minlength=n_seeds * n_groups), dtype=np.float64
        ).reshape(n_seeds, n_groups)
        seed_mean = sums.sum(axis=1) / np.maximum(per_seed, 1)
        e = col[keep] - seed_mean[seed[keep]]
        means = np.full(n_groups, np.nan)
        means[has] = np.bincount(group[keep], weights=e, minlength=n_groups)[has] / n_g[has]
        gap = float(np.nanmax(means) - np.nanmin(means))
        if gap > best_gap + _EPS:
            best, best_gap = _Ends(c, means, sums, counts), gap
    return best


def _top_seeds(
    ends: _Ends, k: int
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
    """The k seeds with the largest within-seed difference; their high and low groups."""
    present = (ends.counts > 0) & ~np.isnan(ends.means)[None, :]
    m = np.nan_to_num(ends.means, nan=0.0)[None, :]
    hi = np.where(present, m, -np.inf).argmax(axis=1)
    lo = np.where(present, m, np.inf).argmin(axis=1)
    rows = np.arange(ends.counts.shape[0])
    seed_means = ends.sums / np.maximum(ends.counts, 1)
    diff = seed_means[rows, hi] - seed_means[rows, lo]
    ok = (present.sum(axis=1) >= 2) & (hi != lo) & (diff > _EPS)
    candidates = np.flatnonzero(ok)
    if not candidates.size:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, np.zeros(0)
    top_group = int(np.nanargmax(ends.means))
    bottom_group = int(np.nanargmin(ends.means))
    exact = (hi[candidates] == top_group) & (lo[candidates] == bottom_group)
    # largest difference first, then seeds holding exactly the two defining groups, then order
    order = np.lexsort((candidates, ~exact, -diff[candidates]))[:k]
    chosen = candidates[order]
    return chosen, hi[chosen], lo[chosen], diff[chosen]


# --- the pairs --------------------------------------------------------------------------------


def find_pairs(
    metric: str,
    values: MetricValues,
    observations: Sequence[Observation],
    seed_idx: NDArray[np.int64],
    group_idx: NDArray[np.int64],
    seed_labels: Sequence[str],
    group_labels: Sequence[str],
    k: int = PAIRS,
) -> tuple[CounterfactualPair, ...]:
    """Up to ``k`` counterfactual pairs behind ``metric``'s gap (none when the gap is 0)."""
    if k <= 0:
        return ()
    valid = values.valid
    rows = np.flatnonzero(valid)
    if rows.size < 2:
        return ()
    all_valid = rows.size == valid.shape[0]
    x = values.values if all_valid else values.values[rows]
    seed = seed_idx if all_valid else seed_idx[rows]
    group = group_idx if all_valid else group_idx[rows]
    ends = _ends(x, seed, group, len(seed_labels), len(group_labels))
    if ends is None:
        return ()
    chosen, hi, lo, diff = _top_seeds(ends, k)
    if not chosen.size:
        return ()
    col = x[:, ends.column]
    column = None if values.columns == ("value",) else values.columns[ends.column]
    picked = np.flatnonzero(np.isin(seed, chosen))
    out = []
    for s, gh, gl, d in zip(chosen.tolist(), hi.tolist(), lo.tolist(), diff.tolist(), strict=True):
        here = picked[seed[picked] == s]
        high = here[group[here] == gh]
        low = here[group[here] == gl]
        i = int(high[np.argmax(col[high])])  # the variant that shows the difference best
        j = int(low[np.argmin(col[low])])
        oi, oj = (int(rows[i]), int(rows[j])) if not all_valid else (i, j)
        out.append(
            _pair(
                metric,
                column,
                seed_labels[s],
                float(d),
                _variant(observations[oi], group_labels[gh], float(col[i])),
                _variant(observations[oj], group_labels[gl], float(col[j])),
            )
        )
    return tuple(out)


def _variant(o: Observation, group: str, value: float) -> Variant:
    return Variant(
        record_id=o.id,
        variant_id=o.variant_id,
        group=group,
        assignments=dict(sorted(o.assignments.items())),
        value=value,
        trace_id=o.trace_id,
        prompt=_excerpt(o.prompt, _PROMPT_CHARS) if o.captured and o.prompt else None,
        response=_excerpt(o.response, _RESPONSE_CHARS) if o.captured else None,
        signals=process_signals(o.trace),
    )


def _pair(
    metric: str, column: str | None, seed: str, difference: float, high: Variant, low: Variant
) -> CounterfactualPair:
    differing = []
    if high.signals is not None and low.signals is not None:
        differing = [k for k in SIGNAL_NAMES if high.signals[k] != low.signals[k]]
    if high.response is not None and low.response is not None and high.response != low.response:
        differing.append("response")
    return CounterfactualPair(
        seed, column, difference, high, low, tuple(differing), _summary(metric, column, high, low)
    )


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = len(a | b)
    return 1.0 if union == 0 else len(a & b) / union


def stability_pairs(
    observations: Sequence[Observation], seed_similarities: Mapping[str, float], k: int = PAIRS
) -> tuple[CounterfactualPair, ...]:
    """``counterfactual_stability``'s evidence: the k least stable seeds (lowest mean pairwise
    similarity, then suite order), each as its two least similar variants."""
    if k <= 0 or not seed_similarities:
        return ()
    order = {seed: i for i, seed in enumerate(seed_similarities)}
    worst = sorted(
        (s for s, v in seed_similarities.items() if v < 1.0),
        key=lambda s: (seed_similarities[s], order[s]),
    )[:k]
    members: dict[str, list[Observation]] = {s: [] for s in worst}
    for o in observations:
        if o.seed_id in members:
            members[o.seed_id].append(o)
    out = []
    for seed in worst:
        items = members[seed][:_STABILITY_VARIANTS]
        tokens = [frozenset(o.response.lower().split()) for o in items]
        best: tuple[float, int, int] | None = None
        for i in range(len(items)):
            for j in range(i + 1, len(items)):
                sim = _jaccard(tokens[i], tokens[j])
                if best is None or sim < best[0]:
                    best = (sim, i, j)
        if best is None:
            continue
        sim, i, j = best
        a = _variant(items[i], items[i].group, sim)
        b = _variant(items[j], items[j].group, sim)
        pair = _pair("counterfactual_stability", None, seed, 1.0 - sim, a, b)
        names = _names(a, b)
        out.append(
            replace(
                pair,
                summary=f"{names[0]} and {names[1]} got answers sharing {sim:.0%} of their words",
            )
        )
    return tuple(out)


# --- one line per pair ------------------------------------------------------------------------


def _names(high: Variant, low: Variant) -> tuple[str, str]:
    """The attribute values that tell the two variants apart (their groups otherwise)."""
    keys = [k for k in high.assignments if high.assignments.get(k) != low.assignments.get(k)]
    if not keys:
        return high.group, low.group

    def name(v: Variant) -> str:  # "female", but "age 60" rather than a bare "60"
        values = [(k, v.assignments.get(k, "–")) for k in keys]
        return " ".join(f"{k} {x}" if x.replace(".", "", 1).isdigit() else x for k, x in values)

    return name(high), name(low)


def _escalation(s: Mapping[str, Any] | None, reason: str | None = None) -> str:
    if not s or not s["escalated"]:
        return "not"
    why = s["escalation_reason"]
    if reason is not None and why != reason:
        return f"escalated ({why or 'no reason'})"
    return f"escalated ({why})" if why else "escalated"


def _tools(s: Mapping[str, Any] | None) -> str:
    names = list(dict.fromkeys(s["tool_calls"])) if s else []
    return "called " + ", ".join(names) if names else "called no tool"


def _friction(s: Mapping[str, Any] | None) -> str:
    points = s["friction_points"] if s else []
    if not points:
        return "met no friction"
    return f"met {len(points)} friction point{'s' * (len(points) != 1)} ({', '.join(points)})"


def _exposure(s: Mapping[str, Any] | None, column: str | None) -> str:
    ranks = [d["rank"] for d in (s["retrieved_documents"] if s else []) if d["group"] == column]
    if not ranks:
        return f"was shown no {column} document"
    return f"saw {column} at rank {', '.join(map(str, ranks))}"


def _describe(metric: str, column: str | None, v: Variant) -> str:
    s = v.signals
    if metric == "escalation_parity":
        return _escalation(s)
    if metric == "escalation_reason_parity":
        return _escalation(s, column)
    if metric == "tool_use_parity":
        return _tools(s)
    if metric == "friction_point_gap":
        return _friction(s)
    if metric == "plan_length_gap":
        return f"planned {int(v.value)} step{'s' * (v.value != 1)}"
    if metric == "retrieval_exposure_gap":
        return _exposure(s, column) + f" (exposure {v.value:.2f})"
    if metric == "refusal_gap":
        return "refused" if v.value else "did not refuse"
    if metric == "verbosity_gap":
        return f"answered in {int(v.value)} words"
    return f"scored {v.value:.3g}"


def _summary(metric: str, column: str | None, high: Variant, low: Variant) -> str:
    a, b = _names(high, low)
    return f"{a} {_describe(metric, column, high)}, {b} {_describe(metric, column, low)}"
