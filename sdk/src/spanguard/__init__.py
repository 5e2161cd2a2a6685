"""spanguard: capture an LLM agent's process as OpenTelemetry spans.

The SDK depends only on ``opentelemetry-api`` and ``opentelemetry-sdk``; it never imports numpy,
click or the processor, because it runs inside the user's agent process.
"""

from __future__ import annotations

from . import semconv
from .exceptions import ConfigError, SpanguardError

__all__ = ["ConfigError", "SpanguardError", "semconv"]
