"""``--redact``: an evaluation with every app-provided free text taken out, for the reports.

What the app wrote — prompts, responses, plan steps, friction text, escalation reasons, text in
a record's metadata, app error messages — may hold what must not leave the machine (a key the
app put in a tool argument, a customer's words). :func:`redact_evaluation` returns the same
evaluation with each of those replaced by ``[redacted]``; the signals the metrics compare stay:
counts (how many plan steps, friction points), whether a request escalated, tool names,
document ids, groups and ranks, ids, scores. Any report rendered from it (JSON, Markdown, JUnit,
HTML, the console) carries no free text: sentences built from signals (a pair's summary, a
metric's details) have every app text found in the run scrubbed out of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from ...traces.model import ProcessTrace
from ..gate.results import CounterfactualPair, Evaluation, MetricResult, Variant
from ..records import Observation

__all__ = ["REDACTED", "redact_evaluation"]

REDACTED = "[redacted]"
_SHORTEST = 3  # shorter app texts are not scrubbed out of sentences (they match everywhere)


def _strings(value: object) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _free_texts(ev: Evaluation) -> list[str]:
    """Every app-provided text of the run, longest first (so a text holding another goes
    first)."""
    found: set[str] = set()
    for o in ev.observations:
        found.update((o.prompt, o.response), _strings(dict(o.metadata)))
        if o.trace is not None:
            found.update(o.trace.plan_steps, o.trace.friction_points)
            if o.trace.escalation_reason:
                found.add(o.trace.escalation_reason)
    for r in ev.results:
        for p in r.evidence:
            for v in (p.high, p.low):
                found.update(t for t in (v.prompt, v.response) if t)
                for name in ("plan_steps", "friction_points", "escalation_reason"):
                    found.update(_strings(dict(v.signals or {}).get(name)))
    texts = {t for t in found if isinstance(t, str) and len(t.strip()) >= _SHORTEST}
    return sorted(texts, key=lambda t: (-len(t), t))


def _scrub(text: str, texts: list[str]) -> str:
    for secret in texts:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def _scrub_value(value: Any, texts: list[str]) -> Any:
    if isinstance(value, str):
        return _scrub(value, texts)
    if isinstance(value, Mapping):
        return {_scrub(str(k), texts): _scrub_value(v, texts) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_scrub_value(v, texts) for v in value)
    return value


def _metadata(value: Any) -> Any:
    """Metadata with every string replaced: numbers, booleans and structure stay."""
    if isinstance(value, str):
        return REDACTED
    if isinstance(value, Mapping):
        return {k: _metadata(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_metadata(v) for v in value]
    return value


def _trace(trace: ProcessTrace | None) -> ProcessTrace | None:
    if trace is None:
        return None
    return replace(
        trace,
        plan_steps=(REDACTED,) * len(trace.plan_steps),
        friction_points=(REDACTED,) * len(trace.friction_points),
        escalation_reason=REDACTED if trace.escalation_reason else None,
    )


def _observation(o: Observation) -> Observation:
    return replace(
        o, prompt="", response="", metadata=_metadata(dict(o.metadata)), trace=_trace(o.trace)
    )


def _signals(signals: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    if signals is None:
        return None
    out = dict(signals)
    for name in ("plan_steps", "friction_points"):
        if isinstance(out.get(name), list | tuple):
            out[name] = [REDACTED] * len(out[name])
    if out.get("escalation_reason"):
        out["escalation_reason"] = REDACTED
    return out


def _variant(v: Variant) -> Variant:
    return replace(v, prompt=None, response=None, signals=_signals(v.signals))


def _pair(p: CounterfactualPair, texts: list[str]) -> CounterfactualPair:
    return replace(
        p,
        high=_variant(p.high),
        low=_variant(p.low),
        summary=_scrub(p.summary, texts),
        column=None if p.column is None else _scrub(p.column, texts),
    )


def _result(r: MetricResult, texts: list[str]) -> MetricResult:
    return replace(
        r,
        evidence=tuple(_pair(p, texts) for p in r.evidence),
        warnings=tuple(_scrub(w, texts) for w in r.warnings),
        details=_scrub_value(dict(r.details), texts),
        reason_text=_scrub(r.reason_text, texts),
        diagnosis=_scrub(r.diagnosis, texts),
    )


def redact_evaluation(ev: Evaluation) -> Evaluation:
    """``ev`` with every app-provided free text replaced by ``[redacted]`` (signals stay)."""
    texts = _free_texts(ev)
    return replace(
        ev,
        observations=tuple(_observation(o) for o in ev.observations),
        results=tuple(_result(r, texts) for r in ev.results),
        errors=tuple({**e, "error": REDACTED} for e in ev.errors),
    )
