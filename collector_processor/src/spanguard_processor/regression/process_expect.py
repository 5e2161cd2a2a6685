"""Process expectations learned from the clean traces of one question.

trace2eval learns the *text* shape of a good answer from the clean answers to the same
question. Agent traces also record what the agent *did*; the same idea applied there gives
checks no text-only tool can make: which tools a good answer always used and in what order,
whether it escalated, how long its plan was, how much friction it put in front of the user and
which document it always retrieved near the top.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["TOP_K", "learn_process_checks"]

#: A document counts as "retrieved near the top" at this rank or better.
TOP_K = 5


def _tools(process: dict[str, Any]) -> list[str]:
    return [str(call.get("name")) for call in process.get("tool_calls", [])]


def _top_documents(process: dict[str, Any]) -> dict[str, int]:
    best: dict[str, int] = {}
    for doc in process.get("retrieved_documents", []):
        doc_id, rank = doc.get("id"), doc.get("rank")
        if isinstance(doc_id, str) and isinstance(rank, int) and rank <= TOP_K:
            best[doc_id] = min(rank, best.get(doc_id, rank))
    return best


def learn_process_checks(processes: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Checks every one of ``processes`` (clean traces of one question) satisfies."""
    if not processes:
        return []
    checks: list[dict[str, Any]] = []
    sequences = [_tools(p) for p in processes]
    common = set(sequences[0]).intersection(*map(set, sequences[1:]))
    if common:
        checks.append({"type": "tools_include", "value": sorted(common)})
    if sequences[0] and all(seq == sequences[0] for seq in sequences) and len(sequences[0]) > 1:
        checks.append({"type": "tool_sequence", "value": list(sequences[0])})
    escalations = {bool(p.get("escalated", False)) for p in processes}
    if len(escalations) == 1:
        checks.append({"type": "escalated", "value": escalations.pop()})
    plan = max(len(p.get("plan_steps", [])) for p in processes)
    if plan:
        checks.append({"type": "max_plan_steps", "value": plan})
    friction = max(len(p.get("friction_points", [])) for p in processes)
    checks.append({"type": "max_friction_points", "value": friction})
    tops = [_top_documents(p) for p in processes]
    shared = set(tops[0]).intersection(*map(set, tops[1:]))
    if shared:
        doc = min(shared, key=lambda d: (max(t[d] for t in tops), d))
        checks.append({"type": "doc_in_top_k", "value": doc, "k": TOP_K})
    return checks
