"""Model calls from LLM spans, across the GenAI, OpenInference and OpenLLMetry conventions (see
``docs/attributes.md``, "Model calls, questions and answers"): which spans are model calls
(:func:`is_llm_span`) and what each one reports (:func:`llm_call`: provider, models, token
usage, finish reasons, requested tools, duration, cost).

The messages of those spans are read by :mod:`._messages`; this module re-exports its entry
points, so ``_llm`` stays the one import for everything about an LLM span. Pure; never raises
on malformed input: what cannot be read is unknown (None).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from spanguard import semconv

from ..ingest.spans import AttrValue, SpanRecord
from ._documents import finite_number
from ._messages import (
    Message,
    input_messages,
    json_value,
    nonblank,
    output_messages,
    question_and_answer,
    requested_tools,
    text_of,
)
from .parts import LLMCall

__all__ = [
    "MESSAGE_KEYS",
    "Message",
    "input_messages",
    "is_llm_span",
    "llm_call",
    "output_messages",
    "question_and_answer",
    "requested_tools",
    "text_of",
]

#: The key prefixes a model call's messages sit under, in each convention (GenAI, OpenInference,
#: OpenLLMetry): a span with none of them recorded no message text.
MESSAGE_KEYS = (
    semconv.GEN_AI_INPUT_MESSAGES,
    semconv.GEN_AI_OUTPUT_MESSAGES,
    semconv.LLM_INPUT_MESSAGES,
    semconv.LLM_OUTPUT_MESSAGES,
    semconv.GEN_AI_PROMPT,
    semconv.GEN_AI_COMPLETION,
)

_LLM_OPERATIONS = frozenset({"chat", "text_completion", "generate_content", "completion"})


def is_llm_span(span: SpanRecord) -> bool:
    """A model call under any convention (GenAI chat/completion, OpenInference LLM,
    OpenLLMetry ``llm.request.type``)."""
    attrs = span.attributes
    return (
        attrs.get(semconv.GEN_AI_OPERATION_NAME) in _LLM_OPERATIONS
        or attrs.get(semconv.OPENINFERENCE_SPAN_KIND) == semconv.OI_KIND_LLM
        or attrs.get(semconv.TRACELOOP_LLM_REQUEST_TYPE) in ("chat", "completion")
    )


def _count(value: AttrValue) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def _first(attrs: Mapping[str, AttrValue], keys: Iterable[str]) -> AttrValue:
    for key in keys:
        if attrs.get(key) is not None:
            return attrs[key]
    return None


def _request_model(attrs: Mapping[str, AttrValue]) -> str | None:
    model = nonblank(attrs.get(semconv.GEN_AI_REQUEST_MODEL))
    if model:
        return model
    params = json_value(attrs.get(semconv.LLM_INVOCATION_PARAMETERS))
    if isinstance(params, Mapping):
        return nonblank(params.get("model")) or nonblank(params.get("model_name"))
    return None


def _finish_reasons(span: SpanRecord, outputs: Sequence[Message]) -> tuple[str, ...]:
    attrs = span.attributes
    value = attrs.get(semconv.GEN_AI_RESPONSE_FINISH_REASONS)
    if isinstance(value, tuple):
        return tuple(str(v) for v in value if isinstance(v, str))
    if isinstance(value, str):
        parsed = json_value(value) if value.startswith("[") else None
        return tuple(str(v) for v in parsed) if isinstance(parsed, list) else (value,)
    reason = attrs.get(semconv.LLM_FINISH_REASON)
    if isinstance(reason, str) and reason:
        return (reason,)
    return tuple(m.finish_reason for m in outputs if m.finish_reason)


def llm_call(span: SpanRecord, outputs: Sequence[Message]) -> LLMCall:
    """One model call as the agent trace records it (``outputs``: its output messages)."""
    attrs = span.attributes
    duration = (span.end_ns - span.start_ns) / 1e6 if span.end_ns >= span.start_ns > 0 else None
    return LLMCall(
        provider=nonblank(
            _first(
                attrs,
                (
                    semconv.GEN_AI_PROVIDER_NAME,
                    semconv.GEN_AI_SYSTEM,
                    semconv.LLM_PROVIDER,
                    semconv.LLM_SYSTEM,
                ),
            )
        ),
        request_model=_request_model(attrs),
        response_model=nonblank(
            _first(attrs, (semconv.GEN_AI_RESPONSE_MODEL, semconv.LLM_MODEL_NAME))
        ),
        input_tokens=_count(
            _first(
                attrs,
                (
                    semconv.GEN_AI_USAGE_INPUT_TOKENS,
                    semconv.GEN_AI_USAGE_PROMPT_TOKENS,
                    semconv.LLM_TOKEN_COUNT_PROMPT,
                ),
            )
        ),
        output_tokens=_count(
            _first(
                attrs,
                (
                    semconv.GEN_AI_USAGE_OUTPUT_TOKENS,
                    semconv.GEN_AI_USAGE_COMPLETION_TOKENS,
                    semconv.LLM_TOKEN_COUNT_COMPLETION,
                ),
            )
        ),
        finish_reasons=_finish_reasons(span, outputs),
        tool_calls=tuple(name for m in outputs for name, _ in m.tool_calls),
        duration_ms=duration,
        cost_usd=finite_number(_first(attrs, (semconv.COST_USD, semconv.LLM_COST_TOTAL))),
    )
