"""spanguard: capture an LLM agent's process as OpenTelemetry spans.

The SDK depends only on ``opentelemetry-*`` packages; it never imports numpy, click or the
processor, because it runs inside the user's agent process. See docs/sdk.md.
"""

from __future__ import annotations

from . import semconv
from ._annotate import expect, feedback, mark_retried
from ._configure import configure, export_stats, force_flush, shutdown
from ._documents import Document
from ._export import ExportStats
from ._request import Request, RequestScope, current_request, request
from ._scopes import LLMCall, PlanScope, llm_call, plan
from ._signals import escalate, friction, plan_step, record_documents, retrieval, tool
from ._state import Configuration
from .exceptions import ConfigError, SpanguardError

__all__ = [
    "ConfigError",
    "Configuration",
    "Document",
    "ExportStats",
    "LLMCall",
    "PlanScope",
    "Request",
    "RequestScope",
    "SpanguardError",
    "configure",
    "current_request",
    "escalate",
    "expect",
    "export_stats",
    "feedback",
    "force_flush",
    "friction",
    "llm_call",
    "mark_retried",
    "plan",
    "plan_step",
    "record_documents",
    "request",
    "retrieval",
    "semconv",
    "shutdown",
    "tool",
]
