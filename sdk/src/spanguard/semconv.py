"""Span attribute keys and event names: the contract between the SDK and the processor.

Every key that spanguard writes or reads lives here, so nobody repeats a string. Keys come in
three families, emitted side by side so that any OpenTelemetry backend renders the spans:

* OpenTelemetry GenAI semantic conventions (``gen_ai.*``), emitted first;
* OpenInference (``openinference.span.kind``, ``input.value``, ``retrieval.documents.*``), so
  Phoenix, Langfuse and Jaeger show agent and retriever spans natively;
* OpenLLMetry (``traceloop.*``), read by the processor only (spanguard does not emit it);
* ``spanguard.*`` for what no convention covers yet (counterfactual identity, escalations,
  friction, plan steps, feedback, retries, expectations, cost).

Process signals (tool names, document ids/groups/ranks/scores, plan steps, escalations and
friction) are content-free and always recorded. Prompt and response text are content and are
only recorded when content capture is on.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from enum import StrEnum
from typing import Final

# --- OpenTelemetry GenAI semantic conventions ---------------------------------------------
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_SYSTEM: Final = "gen_ai.system"  # older name of gen_ai.provider.name, still read
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
GEN_AI_AGENT_ID: Final = "gen_ai.agent.id"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
GEN_AI_TOOL_TYPE: Final = "gen_ai.tool.type"
GEN_AI_TOOL_DESCRIPTION: Final = "gen_ai.tool.description"
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"  # content
GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"  # content
GEN_AI_DATA_SOURCE_ID: Final = "gen_ai.data_source.id"
GEN_AI_RETRIEVAL_DOCUMENTS: Final = "gen_ai.retrieval.documents"  # JSON [{id, group, rank, score}]
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"  # content (parts shape)
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"  # content (parts shape)
GEN_AI_USAGE_PROMPT_TOKENS: Final = "gen_ai.usage.prompt_tokens"  # older name, read only
GEN_AI_USAGE_COMPLETION_TOKENS: Final = "gen_ai.usage.completion_tokens"  # older, read only
GEN_AI_SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"  # content (parts shape)
GEN_AI_RESPONSE_ID: Final = "gen_ai.response.id"
ERROR_TYPE: Final = "error.type"
EXCEPTION_TYPE: Final = "exception.type"  # on the ``exception`` span event
EXCEPTION_MESSAGE: Final = "exception.message"  # content
EXCEPTION_STACKTRACE: Final = "exception.stacktrace"  # code locations only, capture off

# GenAI log-based events (log records carrying the span's context; docs/opentelemetry.md)
EVENT_INFERENCE_DETAILS: Final = "gen_ai.client.inference.operation.details"
EVENT_OPERATION_EXCEPTION: Final = "gen_ai.client.operation.exception"
EVENT_EVALUATION_RESULT: Final = "gen_ai.evaluation.result"
EVENT_CONTENT: Final = "spanguard.content"  # content of a span other than a model call, as an event
# older per-message events (instrumentations before the inference.operation.details event)
EVENT_SYSTEM_MESSAGE: Final = "gen_ai.system.message"
EVENT_USER_MESSAGE: Final = "gen_ai.user.message"
EVENT_ASSISTANT_MESSAGE: Final = "gen_ai.assistant.message"
EVENT_TOOL_MESSAGE: Final = "gen_ai.tool.message"
EVENT_CHOICE: Final = "gen_ai.choice"
GEN_AI_EVALUATION_NAME: Final = "gen_ai.evaluation.name"
GEN_AI_EVALUATION_SCORE_VALUE: Final = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_SCORE_LABEL: Final = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_EXPLANATION: Final = "gen_ai.evaluation.explanation"

# gen_ai.operation.name values
OP_INVOKE_AGENT: Final = "invoke_agent"
OP_EXECUTE_TOOL: Final = "execute_tool"
OP_RETRIEVAL: Final = "retrieval"
OP_CHAT: Final = "chat"
OP_PLAN: Final = "plan"  # spanguard's plan span (the conventions' plan operation)
# gen_ai.provider.name of spanguard's invoke_agent span (required by the conventions): the agent
# is the app's own, so the provider named is the instrumentation that knows it
AGENT_PROVIDER: Final = "spanguard"
OP_INVOKE_WORKFLOW: Final = "invoke_workflow"
# operations the conversion knows and that carry no signal a metric reads: never noted as unread
OPS_NOT_A_SIGNAL: Final = frozenset(
    {
        OP_INVOKE_WORKFLOW,
        "create_agent",
        "create_memory",
        "search_memory",
        "update_memory",
        "upsert_memory",
        "delete_memory",
        "create_memory_store",
        "delete_memory_store",
    }
)

# --- Model Context Protocol (read only; the mcp SDK's client and server spans) -------------
MCP_METHOD_NAME: Final = "mcp.method.name"  # tools/call, tools/list, initialize, …
MCP_TOOLS_CALL: Final = "tools/call"  # the one MCP method that is a tool call
MCP_TOOL_NAME: Final = "mcp.tool.name"  # older name; the SDK puts gen_ai.tool.name on servers
MCP_SESSION_ID: Final = "mcp.session.id"  # groups a conversation's parentless calls
MCP_CLIENT_SPAN_PREFIX: Final = "MCP send "  # the SDK's client span name: "MCP send tools/call X"

# --- OpenInference --------------------------------------------------------------------------
OPENINFERENCE_SPAN_KIND: Final = "openinference.span.kind"
OI_KIND_AGENT: Final = "AGENT"
OI_KIND_TOOL: Final = "TOOL"
OI_KIND_RETRIEVER: Final = "RETRIEVER"
OI_KIND_LLM: Final = "LLM"
OI_KIND_CHAIN: Final = "CHAIN"
INPUT_VALUE: Final = "input.value"  # content
INPUT_MIME_TYPE: Final = "input.mime_type"
OUTPUT_VALUE: Final = "output.value"  # content
OUTPUT_MIME_TYPE: Final = "output.mime_type"
TOOL_NAME: Final = "tool.name"
TOOL_DESCRIPTION: Final = "tool.description"
LLM_MODEL_NAME: Final = "llm.model_name"
LLM_TOKEN_COUNT_PROMPT: Final = "llm.token_count.prompt"
LLM_TOKEN_COUNT_COMPLETION: Final = "llm.token_count.completion"
LLM_TOKEN_COUNT_TOTAL: Final = "llm.token_count.total"
LLM_COST_TOTAL: Final = "llm.cost.total"
# read only: OpenInference LLM spans
LLM_INPUT_MESSAGES: Final = "llm.input_messages"  # llm.input_messages.{i}.message.{role,...}
LLM_OUTPUT_MESSAGES: Final = "llm.output_messages"  # .message.tool_calls.{j}.tool_call.*
LLM_INVOCATION_PARAMETERS: Final = "llm.invocation_parameters"  # JSON; "model" = request model
LLM_FINISH_REASON: Final = "llm.finish_reason"
LLM_PROVIDER: Final = "llm.provider"
LLM_SYSTEM: Final = "llm.system"
SESSION_ID: Final = "session.id"
# who sent a request (OpenInference, Langfuse, OTel ``user.*``); ``enduser.id`` is its older name
USER_ID: Final = "user.id"
ENDUSER_ID: Final = "enduser.id"
OI_METADATA: Final = "metadata"  # JSON object on any span; read for counterfactual identity
RETRIEVAL_DOCUMENTS_PREFIX: Final = "retrieval.documents"
# retrieval.documents.{i}.document.{field}
DOCUMENT_ID: Final = "id"
DOCUMENT_SCORE: Final = "score"
DOCUMENT_CONTENT: Final = "content"  # content
DOCUMENT_METADATA: Final = "metadata"  # JSON object; spanguard puts group and rank here


def retrieval_document_key(index: int, field: str) -> str:
    """The OpenInference key of one field of the ``index``-th retrieved document."""
    return f"{RETRIEVAL_DOCUMENTS_PREFIX}.{index}.document.{field}"


# --- OpenLLMetry (read only) ----------------------------------------------------------------
TRACELOOP_SPAN_KIND: Final = "traceloop.span.kind"  # workflow | task | agent | tool
TRACELOOP_ENTITY_NAME: Final = "traceloop.entity.name"
TRACELOOP_ENTITY_INPUT: Final = "traceloop.entity.input"  # content (JSON)
TRACELOOP_ENTITY_OUTPUT: Final = "traceloop.entity.output"  # content (JSON)
TRACELOOP_KIND_WORKFLOW: Final = "workflow"
TRACELOOP_KIND_TASK: Final = "task"
TRACELOOP_KIND_AGENT: Final = "agent"
TRACELOOP_KIND_TOOL: Final = "tool"
TRACELOOP_ASSOCIATION_PREFIX: Final = "traceloop.association.properties."  # conversation key
TRACELOOP_LLM_REQUEST_TYPE: Final = "llm.request.type"  # chat | completion (older OpenLLMetry)
GEN_AI_PROMPT: Final = "gen_ai.prompt"  # older OpenLLMetry: gen_ai.prompt.{i}.{role,content}
GEN_AI_COMPLETION: Final = "gen_ai.completion"  # gen_ai.completion.{i}.tool_calls.{j}.name

# --- spanguard ------------------------------------------------------------------------------
NAMESPACE: Final = "spanguard"
REQUEST_ID: Final = "spanguard.request.id"
SEED_ID: Final = "spanguard.seed_id"  # on spans and, since issue 51, evaluation events
# evaluation events carried the seed id as ``spanguard.seed.id`` before issue 51: read, not written
EVENT_SEED_ID_BEFORE_51: Final = "spanguard.seed.id"
VARIANT_ID: Final = "spanguard.variant_id"  # on spans and, since issue 51, evaluation events
# evaluation events carried the variant id as ``spanguard.variant.id`` before issue 51: read only
EVENT_VARIANT_ID_BEFORE_51: Final = "spanguard.variant.id"
ASSIGNMENT_PREFIX: Final = "spanguard.assignment."  # spanguard.assignment.<attr> = <value>
REPEAT: Final = "spanguard.repeat"
PLAN_STEP: Final = "spanguard.plan.step"
ESCALATION_REASON: Final = "spanguard.escalation.reason"
FRICTION_POINT: Final = "spanguard.friction.point"
FEEDBACK: Final = "spanguard.feedback"
RETRIED: Final = "spanguard.retried"
EXPECT_PREFIX: Final = "spanguard.expect."  # spanguard.expect.<check> = <value>
COST_USD: Final = "spanguard.cost_usd"
LLM_REFUSAL: Final = "spanguard.llm.refusal"  # bool: the model refused (OpenAI refusal)
METADATA_PREFIX: Final = "spanguard.metadata."  # extra response metadata, e.g. helpfulness_score
DOCUMENT_GROUP: Final = "group"  # key inside gen_ai.retrieval.documents items and OI metadata
DOCUMENT_RANK: Final = "rank"
CONTENT_TRUNCATED: Final = "spanguard.content.truncated"

# Event names (events live on the span that was current when they happened).
EVENT_ESCALATION: Final = "spanguard.escalation"
EVENT_FRICTION: Final = "spanguard.friction"
EVENT_PLAN_STEP: Final = "spanguard.plan_step"
EVENT_FEEDBACK: Final = "spanguard.feedback"
EVENT_RETRY: Final = "spanguard.retry"
EVENT_EXPECT: Final = "spanguard.expect"

# Span names: "{operation} {name}" as the GenAI conventions do.
SPAN_PLAN: Final = "plan"
SPAN_ANNOTATION: Final = "spanguard.annotate"  # a later span carrying feedback/retry/expect


def assignment_key(attribute: str) -> str:
    """The root-span key that carries one counterfactual attribute assignment."""
    return ASSIGNMENT_PREFIX + attribute


def expect_key(check: str) -> str:
    """The key of one expectation check (``min_chars``, ``contains``, ...)."""
    return EXPECT_PREFIX + check


def metadata_key(name: str) -> str:
    """The key of one extra response-metadata value (``helpfulness_score``, ...)."""
    return METADATA_PREFIX + name


def span_name(operation: str, name: str | None) -> str:
    """``"execute_tool kb_search"``: the GenAI span-name rule."""
    return f"{operation} {name}" if name else operation


# --- content capture: the GenAI instrumentations' switch, read by spanguard too ------------------
CAPTURE_MESSAGE_CONTENT_ENV: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


class ContentCapture(StrEnum):
    """Where :data:`CAPTURE_MESSAGE_CONTENT_ENV` puts prompt and response text, as
    opentelemetry-util-genai's ``ContentCapturingMode`` (the value is the variable's spelling)."""

    NO_CONTENT = "NO_CONTENT"
    SPAN_ONLY = "SPAN_ONLY"
    EVENT_ONLY = "EVENT_ONLY"
    SPAN_AND_EVENT = "SPAN_AND_EVENT"

    @property
    def captured(self) -> bool:
        """Whether content is recorded anywhere (on spans, in events or both)."""
        return self is not ContentCapture.NO_CONTENT


# spanguard's older spellings of "on" (content on spans), beside the GenAI values
_CAPTURE_ON = frozenset({"1", "true", "yes", "on"})


def content_capture(environ: Mapping[str, str] | None = None) -> ContentCapture:
    """The content-capture variable of ``environ`` (default: the process environment), parsed
    once for the SDK and the processor: the GenAI values in any case, ``true``/``1``/``yes``/
    ``on`` as ``SPAN_ONLY``; unset, ``false`` or anything else is ``NO_CONTENT``."""
    env = os.environ if environ is None else environ
    value = env.get(CAPTURE_MESSAGE_CONTENT_ENV, "").strip().upper()
    if value.lower() in _CAPTURE_ON:
        return ContentCapture.SPAN_ONLY
    try:
        return ContentCapture(value)
    except ValueError:
        return ContentCapture.NO_CONTENT


# --- Langfuse (read only; Langfuse's OTel SDK, v3 and later) ---------------------------------
LANGFUSE_OBSERVATION_TYPE: Final = "langfuse.observation.type"  # tool | generation | retriever …
LANGFUSE_OBSERVATION_INPUT: Final = "langfuse.observation.input"  # content (JSON or text)
LANGFUSE_OBSERVATION_OUTPUT: Final = "langfuse.observation.output"  # content (JSON or text)
LANGFUSE_OBSERVATION_METADATA: Final = "langfuse.observation.metadata"  # .{key} = JSON value
LANGFUSE_OBSERVATION_MODEL: Final = "langfuse.observation.model.name"
LANGFUSE_OBSERVATION_USAGE: Final = "langfuse.observation.usage_details"  # JSON {input, output}
LANGFUSE_OBSERVATION_COST: Final = "langfuse.observation.cost_details"  # JSON {total} in USD
LANGFUSE_TRACE_INPUT: Final = "langfuse.trace.input"  # content
LANGFUSE_TRACE_OUTPUT: Final = "langfuse.trace.output"  # content
LANGFUSE_TRACE_METADATA: Final = "langfuse.trace.metadata"  # .{key} = JSON value
LANGFUSE_SESSION_ID: Final = "langfuse.session.id"  # older name of session.id
LANGFUSE_USER_ID: Final = "langfuse.user.id"  # older name of user.id
LF_TYPE_TOOL: Final = "tool"
LF_TYPE_GENERATION: Final = "generation"
LF_TYPE_RETRIEVER: Final = "retriever"
LF_TYPE_AGENT: Final = "agent"
LF_TYPE_EVENT: Final = "event"

# --- placeholders instrumentations write in place of hidden text (read as absent) -----------
OI_REDACTED: Final = "__REDACTED__"  # OpenInference OPENINFERENCE_HIDE_INPUTS / _OUTPUTS / …
