"""Content redaction applied by the processor before anything is stored.

Two independent, opt-in measures, applied to span and span-event attributes:

* ``drop_content`` removes every attribute the contract marks as content (prompt and response
  text, retrieved document text): the process signals the evaluators need stay.
* a ``module:function`` hook the operator names (``--redact-hook``) receives ``(key, text)``
  for every remaining string attribute and returns the text to store, or ``None`` to drop the
  attribute. It is the only code the processor runs from its configuration.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from spanguard import semconv
from spanguard.exceptions import ConfigError

from ..common.references import resolve
from ..ingest.otlp_logs import LOG_BODY

__all__ = ["CONTENT_KEYS", "RedactionFailed", "Redactor", "is_content_key", "load_hook"]

RedactHook = Callable[[str, str], "str | None"]

CONTENT_KEYS = frozenset(
    {
        semconv.GEN_AI_INPUT_MESSAGES,
        semconv.GEN_AI_OUTPUT_MESSAGES,
        semconv.GEN_AI_SYSTEM_INSTRUCTIONS,
        semconv.INPUT_VALUE,
        semconv.OUTPUT_VALUE,
        semconv.TRACELOOP_ENTITY_INPUT,
        semconv.TRACELOOP_ENTITY_OUTPUT,
        LOG_BODY,  # a log record's body (the older GenAI events put the message there)
    }
)
_DOCUMENT_CONTENT = re.compile(
    rf"^{re.escape(semconv.RETRIEVAL_DOCUMENTS_PREFIX)}\.\d+\.document\."
    rf"{re.escape(semconv.DOCUMENT_CONTENT)}$"
)


class RedactionFailed(Exception):
    """The redaction hook raised or returned a non-string: the request is refused, not stored."""


def is_content_key(key: str) -> bool:
    """True for an attribute that carries prompt, response or document text."""
    return key in CONTENT_KEYS or _DOCUMENT_CONTENT.match(key) is not None


def load_hook(reference: str) -> RedactHook:
    """Import the ``module:function`` the operator named; :class:`ConfigError` if it is not one."""
    hook: RedactHook = resolve(
        reference, "the redaction hook", error=lambda message: ConfigError("redact_hook", message)
    )
    return hook


@dataclass(frozen=True, slots=True)
class Redactor:
    """What to remove or rewrite; ``active`` is False when nothing would change."""

    drop_content: bool = False
    hook: RedactHook | None = None

    @property
    def active(self) -> bool:
        return self.drop_content or self.hook is not None

    def keeps(self, key: str) -> bool:
        """False for an attribute the content rule drops whatever its value."""
        return not (self.drop_content and is_content_key(key))

    def text(self, key: str, value: str | None) -> tuple[bool, str | None]:
        """``(keep, new_value)`` for one attribute; ``value`` is None for non-string values."""
        if self.drop_content and is_content_key(key):
            return False, None
        if self.hook is None or value is None:
            return True, value
        try:
            replaced = self.hook(key, value)
        except Exception as exc:
            raise RedactionFailed(
                f"the redaction hook raised {type(exc).__name__} for '{key}': {exc}"
            ) from exc
        if replaced is None:
            return False, None
        if not isinstance(replaced, str):
            raise RedactionFailed(
                f"the redaction hook returned {type(replaced).__name__} for "
                f"'{key}'; it must return a string or None."
            )
        return True, replaced
