"""Case diffs: for a case that went from pass to fail, what its baseline and current runs did.

``cases run`` keeps, per case (``case_details.<id>`` in the run file), the outcome, failed
checks with their reasons, latency and cost, and under ``evidence`` what a reviewer needs to
see the change: the question, the trace id, an output excerpt and the process trace. ``check``
pairs the two runs' details of each flipped case into a :class:`CaseDiff`: one row per signal,
baseline beside current, the rows behind a failing check marked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from ...traces.model import ProcessTrace, RetrievedDocument
from ..checks import check_type
from ..run.results import CaseEvidence, CaseOutcome
from ..vocabulary import FailureReason, Outcome

__all__ = ["CaseDiff", "DiffRow", "case_diffs"]

# --- the diff ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class DiffRow:
    """One signal, baseline beside current; ``failing`` when a failing check is about it."""

    name: str
    baseline: str
    current: str
    changed: bool
    failing: bool
    note: str = ""


@dataclass(frozen=True)
class CaseDiff:
    case_id: str
    input: str | None
    baseline_trace: str | None
    current_trace: str | None
    failed_checks: tuple[tuple[str, str], ...]  # (type, detail) of the current run
    rows: tuple[DiffRow, ...]

    @property
    def summary(self) -> str:
        """One line: the failing checks, then what changed in the rows they point at."""
        checks = (
            "; ".join(f"{t} failed ({d})" if d else f"{t} failed" for t, d in self.failed_checks)
            or "fails now"
        )
        notes = [
            f"{r.name}: {r.note or f'{r.baseline} → {r.current}'}"
            for r in self.rows
            if r.failing and r.changed and r.name != "output"
        ]
        return checks + ("; " + "; ".join(notes) if notes else "")


def _join(items: Sequence[str], arrow: bool = False) -> str:
    return (" → " if arrow else "; ").join(items) if items else "none"


def _docs(docs: Sequence[RetrievedDocument]) -> str:
    return (
        ", ".join(f"{d.id or '?'} #{d.rank if d.rank is not None else '?'}" for d in docs) or "none"
    )


def _list_note(before: Sequence[str], after: Sequence[str]) -> str:
    """What changed between two lists: items missing, items new, or only their order."""
    missing = [t for t in dict.fromkeys(before) if t not in after]
    added = [t for t in dict.fromkeys(after) if t not in before]
    notes = []
    if missing:
        notes.append("missing " + ", ".join(missing))
    if added:
        notes.append("new " + ", ".join(added))
    if not notes and list(before) != list(after):
        notes.append("order changed" if len(before) == len(after) else "repeats changed")
    return "; ".join(notes)


def _doc_note(before: Sequence[RetrievedDocument], after: Sequence[RetrievedDocument]) -> str:
    ranks_b = {str(d.id): d.rank for d in before}
    ranks_a = {str(d.id): d.rank for d in after}
    note = _list_note(list(ranks_b), list(ranks_a))
    moved = [
        f"{i} #{ranks_b[i]} → #{ranks_a[i]}"
        for i in ranks_b
        if i in ranks_a and ranks_b[i] != ranks_a[i]
    ]
    return "; ".join(x for x in (note if note != "order changed" else "", ", ".join(moved)) if x)


def _number(value: float | None, digits: int) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _evidence(outcome: CaseOutcome) -> CaseEvidence:
    return outcome.evidence or CaseEvidence()


def _rows(base: CaseOutcome, cur: CaseOutcome, failing: set[str]) -> list[DiffRow]:
    be, ce = _evidence(base), _evidence(cur)
    rows: list[tuple[str, str, str, str]] = []
    if be.process is not None or ce.process is not None:
        b, c = be.process or ProcessTrace(), ce.process or ProcessTrace()
        bt, ct = [t.name for t in b.tool_calls], [t.name for t in c.tool_calls]
        bs, cs = b.plan_steps, c.plan_steps
        bf, cf = b.friction_points, c.friction_points
        bd, cd = b.retrieved_documents, c.retrieved_documents
        be_, ce_ = ("yes" if b.escalated else "no"), ("yes" if c.escalated else "no")
        rows += [
            ("tool calls", _join(bt, True), _join(ct, True), _list_note(bt, ct)),
            ("escalated", be_, ce_, ""),
            ("escalation reason", b.escalation_reason or "–", c.escalation_reason or "–", ""),
            ("plan steps", _join(bs), _join(cs), _list_note(bs, cs)),
            ("friction points", _join(bf), _join(cf), _list_note(bf, cf)),
            ("retrieved documents", _docs(bd), _docs(cd), _doc_note(bd, cd)),
        ]
    rows += [
        ("latency (ms)", _number(base.latency_ms, 1), _number(cur.latency_ms, 1), ""),
        ("cost (USD)", _number(base.cost_usd, 6), _number(cur.cost_usd, 6), ""),
        ("output", be.output or "–", ce.output or "–", ""),
    ]
    return [DiffRow(name, b_, c_, b_ != c_, name in failing, note) for name, b_, c_, note in rows]


def _failed(outcome: CaseOutcome) -> list[tuple[str, str]]:
    """(check type, why) for each failed check; ``details`` holds "type: why" lines."""
    if outcome.outcome == Outcome.MISSING:
        return [(FailureReason.MISSING_OUTPUT, "no output matched the case")]
    why: dict[str, str] = {}
    for line in outcome.details:
        kind, _, reason = line.partition(": ")
        why.setdefault(kind, reason)
    return [(t, why.get(t, "")) for t in outcome.failed_checks]


def _trace_id(outcome: CaseOutcome) -> str | None:
    return _evidence(outcome).trace_id


#: rows whose values are the app's own words: ``redact`` shows only whether there were any
_FREE_TEXT_ROWS = frozenset({"escalation reason", "plan steps", "friction points"})


def _without_text(row: DiffRow) -> DiffRow:
    if row.name not in _FREE_TEXT_ROWS:
        return row

    def hide(value: str) -> str:
        return value if value in ("–", "none", "") else "[redacted]"

    return replace(row, baseline=hide(row.baseline), current=hide(row.current), note="")


def case_diffs(
    baseline: Mapping[str, CaseOutcome],
    current: Mapping[str, CaseOutcome],
    case_ids: Sequence[str],
    *,
    redact: bool = False,
) -> tuple[CaseDiff, ...]:
    """A diff for every listed case that both runs hold evidence for, in the given order;
    ``redact`` leaves the question and the outputs out (signals and ids stay)."""
    out = []
    for case_id in case_ids:
        base, cur = baseline.get(case_id), current.get(case_id)
        if base is None or cur is None or base.evidence is None or cur.evidence is None:
            continue
        failed = _failed(cur)
        failing = {ct.label if (ct := check_type(t)) else "output" for t, _ in failed}
        question = _evidence(cur).input or _evidence(base).input
        rows = [
            _without_text(r) if redact else r
            for r in _rows(base, cur, failing)
            if not (redact and r.name == "output")
        ]
        out.append(
            CaseDiff(
                case_id,
                question if not redact else None,
                _trace_id(base),
                _trace_id(cur),
                tuple(failed),
                tuple(rows),
            )
        )
    return tuple(out)
