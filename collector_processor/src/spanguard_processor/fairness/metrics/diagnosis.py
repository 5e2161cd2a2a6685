"""Which records carry what a metric reads, and when none does, what was seen instead.

Zero because nothing happened and zero because nothing was recorded look the same in a metric's
values. Each built-in metric names its signal (``MetricDefinition.signal``, one of
:data:`SIGNALS`); the evaluation (:func:`..evaluate.with_signal`) fills a result's ``signal``,
``signal_records`` (how many records carry it) and, when that is 0, ``diagnosis``: the keys
seen that might hold it, counted (from the per-trace
:class:`~spanguard_processor.traces.parts.Unread` notes), and where the docs say how to record
it. The gate turns ``signal_records == 0`` into NO_SIGNAL.

Tool calls, documents, plan steps, model calls and text are carried by the records that hold
them. An escalation or a friction point is different: a request without one is signal too, when
its trace recorded the app's process at all — so those two are carried by every record whose
trace holds any process signal (a tool call, document, plan step, escalation or friction point),
and by every fairtrace record whose trace states it (``"escalated": false`` is recorded).
Likewise a record whose trace states ``tool_calls: []`` or ``plan_steps: []`` carries "no tool
call" or "no plan step": an explicit negative is signal, absence is not.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ...traces.parts import Unread
from ...traces.unread import NO_DOCUMENTS, NO_TEXT
from ..records import Observation

__all__ = [
    "ATTRIBUTES_DOC",
    "CONTENT_DOC",
    "SIGNALS",
    "SignalCounts",
    "diagnosis_text",
    "from_spans",
    "switches",
    "ungrouped_documents",
    "unread_notes",
]

ATTRIBUTES_DOC = "docs/attributes.md#keys-spanguard-does-not-read"
CONTENT_DOC = "docs/sdk.md#privacy"
_EXAMPLES = 3  # unread keys named in one diagnosis
_SWITCH_NOTES = (NO_TEXT, NO_DOCUMENTS)  # notes naming a content switch that is off


@dataclass(frozen=True)
class Signal:
    """One kind of signal: which records carry it, which unread keys might hold it, and what
    the diagnosis says when no record does."""

    carries: Callable[[Observation], bool]
    suggests: Callable[[Unread], bool]
    missing: str


def _process(o: Observation) -> bool:
    t = o.trace
    return t is not None and bool(
        t.tool_calls or t.retrieved_documents or t.plan_steps or t.escalated or t.friction_points
    )


def _process_or_stated(key: str) -> Callable[[Observation], bool]:
    """Any process signal, or a fairtrace record that states ``key`` (``escalated: false``)."""

    def carries(o: Observation) -> bool:
        return _process(o) or (o.trace is not None and key in o.stated)

    return carries


def _llm_calls(o: Observation) -> bool:
    calls = o.usage.get("llm_calls") if o.usage else None
    return isinstance(calls, int) and calls > 0


def _tokens(o: Observation) -> bool:
    tokens = o.usage.get("total_tokens") if o.usage else None
    return isinstance(tokens, int | float) and tokens > 0


def _scored(key: str) -> Callable[[Observation], bool]:
    def carries(o: Observation) -> bool:
        return o.has_output or (bool(o.metadata) and o.metadata.get(key) is not None)

    return carries


def _mentions(*words: str) -> Callable[[Unread], bool]:
    def suggests(note: Unread) -> bool:
        key = note.key.lower()
        return any(word in key for word in words)

    return suggests


_PROCESS_WORDS = (
    "tool",
    "task",
    "retriev",
    "rerank",
    "event",
    "escalat",
    "hand",
    "friction",
    "plan",
    "guardrail",
)
_TEXT_WORDS = ("output", "input", "event gen_ai", "generation")

SIGNALS: dict[str, Signal] = {
    "tool calls": Signal(
        lambda o: o.trace is not None and (bool(o.trace.tool_calls) or "tool_calls" in o.stated),
        _mentions("tool", "task"),
        "no record holds a tool call",
    ),
    "retrieved documents": Signal(
        lambda o: o.trace is not None and any(d.group for d in o.trace.retrieved_documents),
        _mentions("retriev", "rerank", "embedding"),
        "no record holds a retrieved document with a group",
    ),
    "plan steps": Signal(
        lambda o: o.trace is not None and (bool(o.trace.plan_steps) or "plan_steps" in o.stated),
        _mentions("plan", "chain"),
        "no record holds a plan step",
    ),
    "escalations": Signal(
        _process_or_stated("escalated"),
        _mentions(*_PROCESS_WORDS),
        "no record holds any process signal (tool call, retrieved document, plan step, "
        "escalation or friction point), so a request without an escalation cannot be told "
        "from one whose escalation was not recorded",
    ),
    "friction points": Signal(
        _process_or_stated("friction_points"),
        _mentions(*_PROCESS_WORDS),
        "no record holds any process signal (tool call, retrieved document, plan step, "
        "escalation or friction point), so a request without friction cannot be told from "
        "one whose friction was not recorded",
    ),
    "LLM calls": Signal(
        _llm_calls,
        _mentions("generation", "gen_ai.operation", "embedding", "llm"),
        "no record holds a model call",
    ),
    "token counts": Signal(
        _tokens,
        _mentions("generation", "gen_ai.operation", "usage"),
        "no record holds a model call with token counts",
    ),
    "output text": Signal(lambda o: o.has_output, _mentions(*_TEXT_WORDS), "no output text"),
    "output text or helpfulness scores": Signal(
        _scored("helpfulness_score"),
        _mentions(*_TEXT_WORDS),
        "no output text and no helpfulness_score",
    ),
    "output text or toxicity scores": Signal(
        _scored("toxicity_score"), _mentions(*_TEXT_WORDS), "no output text and no toxicity_score"
    ),
}


class SignalCounts:
    """Counts per signal kind over one evaluation's records, each computed once."""

    def __init__(self, observations: Sequence[Observation]) -> None:
        self._obs = observations
        self._counts: dict[str, int] = {}
        self._unread: Counter[tuple[str, str]] | None = None

    def count(self, name: str) -> int:
        if name not in self._counts:
            carries = SIGNALS[name].carries
            self._counts[name] = sum(1 for o in self._obs if carries(o))
        return self._counts[name]

    def unread(self) -> Counter[tuple[str, str]]:
        """Every unread key over the records: (key, span name) → spans."""
        if self._unread is None:
            self._unread = unread_notes(self._obs)
        return self._unread

    def switches(self, prefix: str) -> list[str]:
        """The content switches that are off, from the notes under ``prefix``
        (:data:`NO_TEXT`, :data:`NO_DOCUMENTS`), as diagnosis parts, most spans first."""
        return switches(self.unread(), prefix)

    def diagnosis(self, name: str) -> str:
        return diagnosis_text(
            name,
            len(self._obs),
            self.unread(),
            lambda: from_spans(self._obs),
            lambda: ungrouped_documents(self._obs),
        )


def unread_notes(observations: Iterable[Observation]) -> Counter[tuple[str, str]]:
    """Every unread key over ``observations``: (key, span name) → spans."""
    out: Counter[tuple[str, str]] = Counter()
    for o in observations:
        for note in o.unread:
            out[(note.key, note.span)] += note.count
    return out


def from_spans(observations: Iterable[Observation]) -> int:
    """The records recorded from spans (with a trace id)."""
    return sum(1 for o in observations if o.trace_id is not None)


def ungrouped_documents(observations: Iterable[Observation]) -> int:
    """Retrieved documents without a group, over ``observations``."""
    return sum(
        1
        for o in observations
        if o.trace is not None
        for d in o.trace.retrieved_documents
        if not d.group
    )


def switches(unread: Counter[tuple[str, str]], prefix: str) -> list[str]:
    """The content switches that are off, from the notes under ``prefix``
    (:data:`NO_TEXT`, :data:`NO_DOCUMENTS`), as diagnosis parts, most spans first."""
    notes = unread.items()
    found = sorted(
        (-n, key[len(prefix) :], span) for (key, span), n in notes if key.startswith(prefix)
    )
    what = "text" if prefix == NO_TEXT else "documents"
    return [
        f"{-n} span(s) named {span} recorded no {what}: set {switch}"
        for n, switch, span in found[:_EXAMPLES]
    ]


def diagnosis_text(
    name: str,
    records: int,
    unread: Counter[tuple[str, str]],
    spans: Callable[[], int],
    ungrouped: Callable[[], int],
) -> str:
    """Why no record carries signal ``name``: what was seen that might hold it, over
    ``records`` records with these ``unread`` notes (``spans``: how many were recorded from
    spans; ``ungrouped``: documents without a group; each asked only when needed)."""
    signal = SIGNALS[name]
    parts = [f"{signal.missing} in {records} record(s)"]
    seen = sorted(
        (
            (n, key, span)
            for (key, span), n in unread.items()
            if signal.suggests(Unread(key, span)) and not key.startswith(_SWITCH_NOTES)
        ),
        key=lambda x: (-x[0], x[1], x[2]),
    )
    text = name.startswith("output text")
    prefix = NO_TEXT if text else NO_DOCUMENTS if name == "retrieved documents" else None
    found = switches(unread, prefix) if prefix else []
    if text:
        parts[0] += _capture_note(spans(), bool(seen), bool(found))
    if name == "retrieved documents":
        n_ungrouped = ungrouped()
        if n_ungrouped:
            parts.append(
                f"{n_ungrouped} retrieved document(s) have no group: set one "
                "(docs/attributes.md#foreign-conventions-the-processor-reads)"
            )
    parts.extend(found)
    for n, key, span in seen[:_EXAMPLES]:
        parts.append(f"{n} span(s) named {span} with {key}: not read")
    if len(seen) > _EXAMPLES:
        parts.append(f"{len(seen) - _EXAMPLES} more unread key(s)")
    if seen:
        parts.append(f"see {ATTRIBUTES_DOC}")
    elif not found:
        parts.append(
            "nothing seen that might hold it; see "
            "docs/attributes.md#the-span-contract for how to record it"
        )
    return "; ".join(parts) + "."


def _capture_note(spans: int, seen: bool, switched: bool) -> str:
    """What an output-text diagnosis adds about the records recorded from spans."""
    if spans and seen:
        return (
            f": {spans} were recorded from spans with the text under "
            f"keys spanguard does not read, or with content capture off "
            f"(see {CONTENT_DOC})"
        )
    if spans and switched:
        return f": {spans} were recorded from spans with content capture off"
    if spans:
        return f": {spans} were recorded from spans with content capture off (see {CONTENT_DOC})"
    return ""
