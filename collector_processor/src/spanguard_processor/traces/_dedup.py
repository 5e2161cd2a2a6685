"""One operation, counted once: spans that record the same model or tool call merged into one.

Part of the one conversion, run by :mod:`._normalize` before anything is counted, so calls,
tokens, cost and tool calls count each operation once however many instrumentations saw it:

* **Nested model calls**: a model-call span whose ancestor is a model-call span (spanguard's
  ``llm_call`` around an instrumented client, a framework's LLM span around the client's) is
  merged into the outermost one; the inner (client's) values win, the outer span's fill gaps.
* **Sibling model calls with one response id**: model-call spans with the same
  ``gen_ai.response.id`` that overlap in time (a provider SDK's own span beside OpenLLMetry's
  for the same request) are one call: merged into the earliest, whose values win. Calls one
  after the other are never merged, whatever their ids say (a stub or proxy that answers with
  one id).
* **An empty model-call span beside a call**: a model-call span with no token usage and no
  messages beside a sibling model call that has them (overlapping it, else the next one) is
  merged into that call: not a call of its own (OpenInference LlamaIndex's
  ``OpenAI._prepare_chat_with_tools`` span before each ``OpenAI.achat``). Two such empty
  spans are never merged into each other.
* **Nested tool calls**: a tool span inside a tool span of the same tool (same name, and the
  same ``gen_ai.tool.call.id`` where both have one) is one call: an agent framework's tool span
  around the MCP client's ``tools/call`` span around the MCP server's span.
* **An MCP call beside the framework's record of it**: an MCP ``tools/call`` span and a tool
  span of another instrumentation with the same tool name, neither inside the other (an
  adapter that records the run's tool calls after it, as spanguard's Agents SDK adapter does),
  are paired in time order, the k-th with the k-th: each pair is one call, kept on the
  framework's span.

A merged span's events move to the span kept and its children are re-parented to it. Pure.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from spanguard import semconv

from ..ingest.spans import SpanRecord
from ._llm import MESSAGE_KEYS, is_llm_span, llm_call
from .identity import tool_name

__all__ = ["counted_once"]


def _absorb(
    spans: list[SpanRecord], into: Mapping[str, str], *, absorbed_wins: bool
) -> list[SpanRecord]:
    """``spans`` with each span of ``into`` merged into its target (attributes, events) and
    its children re-parented there."""
    if not into:
        return spans
    by_id = {s.span_id: s for s in spans}
    merged: dict[str, SpanRecord] = {}
    for span in sorted(spans, key=lambda s: (s.start_ns, s.span_id)):
        target = into.get(span.span_id)
        if target is None:
            continue
        base = merged.get(target, by_id[target])
        attrs = (
            {**base.attributes, **span.attributes}
            if absorbed_wins
            else {**span.attributes, **base.attributes}
        )
        merged[target] = replace(base, attributes=attrs, events=(*base.events, *span.events))
    out = []
    for span in spans:
        if span.span_id in into:
            continue
        span = merged.get(span.span_id, span)
        if span.parent_span_id in into:
            span = replace(span, parent_span_id=into[span.parent_span_id])
        out.append(span)
    return out


def _outermost(
    spans: list[SpanRecord], same: Callable[[SpanRecord, SpanRecord], bool]
) -> dict[str, str]:
    """span id → the outermost ancestor ``same`` pairs it with (spans with one only)."""
    by_id = {s.span_id: s for s in spans}
    into: dict[str, str] = {}
    for span in spans:
        found = None
        parent = span.parent_span_id
        seen: set[str] = set()
        while parent in by_id and parent not in seen:
            seen.add(parent)
            if same(by_id[parent], span):
                found = parent
            parent = by_id[parent].parent_span_id
        if found is not None:
            into[span.span_id] = found
    return into


def _both_llm(outer: SpanRecord, inner: SpanRecord) -> bool:
    return is_llm_span(outer) and is_llm_span(inner)


def _same_tool(outer: SpanRecord, inner: SpanRecord) -> bool:
    name = tool_name(inner)
    if name is None or tool_name(outer) != name:
        return False
    ids = [s.attributes.get(semconv.GEN_AI_TOOL_CALL_ID) for s in (outer, inner)]
    return not all(isinstance(i, str) and i for i in ids) or ids[0] == ids[1]


def _is_empty_call(span: SpanRecord) -> bool:
    """A model-call span with no token usage and no messages under any convention's message
    keys (its ``input.value`` may still hold what it prepared): a helper around the call."""
    call = llm_call(span, ())
    return (
        call.input_tokens is None
        and call.output_tokens is None
        and not any(key.startswith(MESSAGE_KEYS) for key in span.attributes)
    )


def _overlap(a: SpanRecord, b: SpanRecord) -> bool:
    return a.start_ns <= b.end_ns and b.start_ns <= a.end_ns


def _siblings(spans: list[SpanRecord]) -> dict[str, str]:
    """Model-call spans that repeat a sibling: the same response id (overlapping), or empty."""
    into: dict[str, str] = {}
    by_response: dict[str, list[SpanRecord]] = defaultdict(list)
    by_parent: dict[str, list[SpanRecord]] = defaultdict(list)
    for span in sorted(spans, key=lambda s: (s.start_ns, s.span_id)):
        if not is_llm_span(span):
            continue
        by_parent[span.parent_span_id].append(span)
        response = span.attributes.get(semconv.GEN_AI_RESPONSE_ID)
        if isinstance(response, str) and response:
            by_response[response].append(span)
    for group in by_response.values():
        for index, span in enumerate(group):
            earlier = (o for o in group[:index] if o.span_id not in into and _overlap(o, span))
            first = next(earlier, None)
            if first is not None:
                into[span.span_id] = first.span_id
    for group in by_parent.values():
        for index, span in enumerate(group):
            if span.span_id in into or not _is_empty_call(span):
                continue
            calls = [o for o in group if o.span_id not in into and not _is_empty_call(o)]
            partner = next((o for o in calls if _overlap(o, span)), None) or next(
                (o for o in group[index + 1 :] if o in calls), None
            )
            if partner is not None:
                into[span.span_id] = partner.span_id
    return into


def _is_mcp_call(span: SpanRecord) -> bool:
    return span.attributes.get(semconv.MCP_METHOD_NAME) == semconv.MCP_TOOLS_CALL


def _ancestors(span: SpanRecord, by_id: Mapping[str, SpanRecord]) -> set[str]:
    found: set[str] = set()
    parent = span.parent_span_id
    while parent in by_id and parent not in found:
        found.add(parent)
        parent = by_id[parent].parent_span_id
    return found


def _mcp_pairs(spans: list[SpanRecord]) -> dict[str, str]:
    """MCP ``tools/call`` span id → the other instrumentation's span of the same call."""
    by_id = {s.span_id: s for s in spans}
    mcp: dict[str, list[SpanRecord]] = defaultdict(list)
    other: dict[str, list[SpanRecord]] = defaultdict(list)
    for span in sorted(spans, key=lambda s: (s.start_ns, s.span_id)):
        name = tool_name(span)
        if name is not None:
            (mcp if _is_mcp_call(span) else other)[name].append(span)
    into: dict[str, str] = {}
    for name, calls in mcp.items():
        for call, record in zip(calls, other.get(name, ()), strict=False):
            related = _ancestors(call, by_id) | _ancestors(record, by_id)
            if call.span_id not in related and record.span_id not in related:
                into[call.span_id] = record.span_id
    return into


def counted_once(spans: Sequence[SpanRecord]) -> list[SpanRecord]:
    """The spans of one trace with each model and tool call on one span (see the module doc)."""
    out = _absorb(list(spans), _outermost(list(spans), _both_llm), absorbed_wins=True)
    out = _absorb(out, _siblings(out), absorbed_wins=False)
    out = _absorb(out, _outermost(out, _same_tool), absorbed_wins=True)
    return _absorb(out, _mcp_pairs(out), absorbed_wins=False)
