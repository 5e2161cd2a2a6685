"""The span scopes of the process signals: ``with spanguard.plan()`` and
``with spanguard.llm_call(model)``, each one span made current for its block (the one-shot
signals, decorators and events, are :mod:`._signals`)."""

from __future__ import annotations

import json
from contextvars import ContextVar
from types import TracebackType
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import INVALID_SPAN, Span, SpanKind
from opentelemetry.util.types import AttributeValue

from . import semconv
from ._content import prepare_content
from ._events import content_on_span, hold_content
from ._instrument import end_with_error
from ._messages import genai_messages, openinference_flat
from ._runtime import (
    active_tracer,
    content_settings,
    internal_error,
    now_ns,
    warn_dropped_field,
)
from ._signals import step_attributes

__all__ = ["LLMCall", "PlanScope", "llm_call", "plan"]

# Per-entry state of plan and LLM-call scopes. The span of each entry travels in the
# OpenTelemetry context (so it follows the context into tasks and thread-pool tasks); the token
# that detaches it stays in the thread or task that entered. So one scope object may be entered
# from many threads and tasks at once.
_SCOPE_SPANS = otel_context.create_key("spanguard.scopes")
_SCOPE_TOKENS: ContextVar[tuple[tuple[_SpanScope, Span, object], ...]] = ContextVar(
    "spanguard_scope_tokens", default=()
)


class _SpanScope:
    """A context manager that opens one span and makes it current."""

    def __init__(self, name: str, attributes: dict[str, AttributeValue], kind: SpanKind) -> None:
        self._name = name
        self._attributes = attributes
        self._kind = kind
        self._last: Span = INVALID_SPAN  # the latest entry's span: for calls from bare threads

    @property
    def _span(self) -> Span:
        """The span of this scope's innermost entry in the current context."""
        entries = otel_context.get_value(_SCOPE_SPANS)
        if isinstance(entries, tuple):
            for scope, span in reversed(entries):
                if scope is self:
                    return span
        return self._last

    def _enter(self) -> None:
        tracer = active_tracer()
        if tracer is None:
            return
        try:
            span = tracer.start_span(
                self._name, kind=self._kind, attributes=self._attributes, start_time=now_ns()
            )
            outer = otel_context.get_value(_SCOPE_SPANS)
            spans = (*(outer if isinstance(outer, tuple) else ()), (self, span))
            ctx = otel_context.set_value(_SCOPE_SPANS, spans, trace.set_span_in_context(span))
            token = otel_context.attach(ctx)
            _SCOPE_TOKENS.set((*_SCOPE_TOKENS.get(), (self, span, token)))
            self._last = span
        except Exception as exc:
            internal_error(self._name, exc)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        entries = _SCOPE_TOKENS.get()
        for index in range(len(entries) - 1, -1, -1):
            if entries[index][0] is self:
                break
        else:  # nothing was started (no tracer) in this thread or task
            return
        _, span, token = entries[index]
        _SCOPE_TOKENS.set(entries[:index] + entries[index + 1 :])
        if exc is None:
            self._finish()  # while the entry is still current, so it sees its own span
        otel_context.detach(token)  # type: ignore[arg-type]
        if exc is not None:
            end_with_error(span, exc)
        else:
            span.end(now_ns())
        if self._last is span:
            self._last = INVALID_SPAN

    def _finish(self) -> None:
        """Set last attributes before the span ends."""


class PlanScope(_SpanScope):
    """``with spanguard.plan(): spanguard.plan_step("look up order")``."""

    def __init__(self, steps: list[str] | None) -> None:
        super().__init__(
            semconv.SPAN_PLAN,
            {
                semconv.GEN_AI_OPERATION_NAME: semconv.OP_PLAN,
                semconv.OPENINFERENCE_SPAN_KIND: semconv.OI_KIND_CHAIN,
            },
            SpanKind.INTERNAL,
        )
        self._steps = steps

    def __enter__(self) -> PlanScope:
        self._enter()
        for step in self._steps or ():
            self.step(step)
        return self

    def step(self, step: str) -> None:
        """Record one step of this plan (on the plan span, wherever it is called from)."""
        attributes = step_attributes(step)
        if attributes is not None and self._span.is_recording():
            self._span.add_event(semconv.EVENT_PLAN_STEP, attributes, now_ns())


def plan(steps: list[str] | None = None) -> PlanScope:
    """Open a ``plan`` span; record its steps with :func:`plan_step` inside it (``steps`` here
    and :meth:`PlanScope.step` are kept as aliases: the same events on the plan span)."""
    return PlanScope(steps)


class LLMCall(_SpanScope):
    """One model call: ``with spanguard.llm_call(model="gpt-4o") as call:
    call.record_usage(120, 40, cost_usd=0.0011)``."""

    def __init__(self, model: str, provider: str | None) -> None:
        attributes: dict[str, AttributeValue] = {
            semconv.GEN_AI_OPERATION_NAME: semconv.OP_CHAT,
            semconv.GEN_AI_REQUEST_MODEL: model,
            semconv.OPENINFERENCE_SPAN_KIND: semconv.OI_KIND_LLM,
            semconv.LLM_MODEL_NAME: model,
        }
        if provider is not None:
            attributes[semconv.GEN_AI_PROVIDER_NAME] = provider
        super().__init__(semconv.span_name(semconv.OP_CHAT, model), attributes, SpanKind.CLIENT)
        self._model = model
        self._response_model: str | None = None

    def __enter__(self) -> LLMCall:
        self._enter()
        return self

    @property
    def span(self) -> Span:
        return self._span

    def record_usage(
        self, input_tokens: int, output_tokens: int, cost_usd: float | None = None
    ) -> None:
        """Token usage and (optionally) the call's cost in US dollars."""
        where = "LLMCall.record_usage()"
        counts: dict[str, int] = {}
        for key, value in (
            (semconv.GEN_AI_USAGE_INPUT_TOKENS, input_tokens),
            (semconv.GEN_AI_USAGE_OUTPUT_TOKENS, output_tokens),
        ):
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                counts[key] = value
            else:
                warn_dropped_field(where, key, "token counts must be non-negative integers")
        attributes: dict[str, AttributeValue] = dict(counts)
        prompt = counts.get(semconv.GEN_AI_USAGE_INPUT_TOKENS)
        completion = counts.get(semconv.GEN_AI_USAGE_OUTPUT_TOKENS)
        if prompt is not None:
            attributes[semconv.LLM_TOKEN_COUNT_PROMPT] = prompt
        if completion is not None:
            attributes[semconv.LLM_TOKEN_COUNT_COMPLETION] = completion
        if prompt is not None and completion is not None:
            attributes[semconv.LLM_TOKEN_COUNT_TOTAL] = prompt + completion
        if cost_usd is not None:
            if isinstance(cost_usd, int | float) and not isinstance(cost_usd, bool):
                attributes[semconv.COST_USD] = float(cost_usd)
            else:
                warn_dropped_field(where, semconv.COST_USD, "a cost must be a number")
        self._span.set_attributes(attributes)

    def set_response_model(self, model: str) -> None:
        """The model that actually answered (defaults to the requested one)."""
        if isinstance(model, str):
            self._response_model = model

    def set_input(self, messages: Any) -> None:
        """The prompt messages (content: capture on only): a string (one user message), chat
        messages ``[{"role", "content", "tool_calls"?}]`` or GenAI messages with ``parts``;
        recorded in the GenAI semconv parts shape, and as OpenInference's flat
        ``llm.input_messages.*`` keys."""
        if content_settings().capture:
            self._set_messages(
                semconv.GEN_AI_INPUT_MESSAGES,
                semconv.LLM_INPUT_MESSAGES,
                genai_messages(messages, "user"),
            )

    def set_output(self, messages: Any) -> None:
        """The response (content: capture on only): a string, chat messages or GenAI messages;
        recorded in the parts shape, each message with a ``finish_reason``, and as
        OpenInference's flat ``llm.output_messages.*`` keys (so Phoenix shows messages)."""
        if content_settings().capture:
            self._set_messages(
                semconv.GEN_AI_OUTPUT_MESSAGES,
                semconv.LLM_OUTPUT_MESSAGES,
                genai_messages(messages, "assistant", output=True),
            )

    def _set_messages(self, key: str, flat_prefix: str, messages: list[dict[str, Any]]) -> None:
        """The messages, redacted and bounded once, under both conventions on the span, and
        held for the call's content event in an event mode (the event carries the GenAI key
        only; with ``EVENT_ONLY`` neither convention's keys land on the span)."""
        prepared = prepare_content(key, messages)
        if prepared is None:
            return
        text, truncated = prepared
        if truncated:
            self._span.set_attribute(semconv.CONTENT_TRUNCATED, True)
        hold_content(self._span, key, text)  # for gen_ai.client.inference.operation.details
        if not content_on_span():
            return
        self._span.set_attribute(key, text)
        try:
            redacted = json.loads(text)
        except ValueError:
            return
        self._span.set_attributes(openinference_flat(redacted, flat_prefix))

    def _finish(self) -> None:
        self._span.set_attribute(semconv.GEN_AI_RESPONSE_MODEL, self._response_model or self._model)


def llm_call(model: str, *, provider: str | None = None) -> LLMCall:
    """Open a ``chat {model}`` span (kind CLIENT) for one model call."""
    if not isinstance(model, str) or not model:
        warn_dropped_field(
            "llm_call()", semconv.GEN_AI_REQUEST_MODEL, "a model name must be a non-empty string"
        )
        model = "unknown"
    return LLMCall(model, provider if isinstance(provider, str) else None)
