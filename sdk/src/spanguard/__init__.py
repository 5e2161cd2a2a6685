"""spanguard: capture an LLM agent's process as OpenTelemetry spans.

The SDK depends only on ``opentelemetry-*`` packages; it never imports numpy, click or the
processor, because it runs inside the user's agent process. See docs/sdk.md.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .exceptions import ConfigError, SpanguardError

if TYPE_CHECKING:
    from . import semconv
    from ._annotate import expect, feedback, mark_retried
    from ._configure import configure, export_stats, force_flush, shutdown
    from ._documents import Document
    from ._export import ExportStats
    from ._request import Request, RequestScope, current_request, request
    from ._scopes import LLMCall, PlanScope, llm_call, plan
    from ._signals import escalate, friction, plan_step, record_documents, retrieval, tool
    from ._state import Configuration

# name -> the module defining it. Loaded on first use, so that ``import spanguard.exceptions``
# (the ``spanguard`` command's first import) does not load the OpenTelemetry SDK.
_LAZY = {
    "semconv": ".semconv",
    **dict.fromkeys(("expect", "feedback", "mark_retried"), "._annotate"),
    **dict.fromkeys(("configure", "export_stats", "force_flush", "shutdown"), "._configure"),
    "Document": "._documents",
    "ExportStats": "._export",
    **dict.fromkeys(("Request", "RequestScope", "current_request", "request"), "._request"),
    **dict.fromkeys(("LLMCall", "PlanScope", "llm_call", "plan"), "._scopes"),
    **dict.fromkeys(
        ("escalate", "friction", "plan_step", "record_documents", "retrieval", "tool"),
        "._signals",
    ),
    "Configuration": "._state",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'spanguard' has no attribute {name!r}")
    value = import_module(module, __name__)
    if name != "semconv":
        value = getattr(value, name)
    globals()[name] = value  # resolved once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


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
