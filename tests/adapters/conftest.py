from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping
from typing import Any

import spanguard
from spanguard.testing import SpanCapture


def call_captured(app: Callable[..., Any], prompt: str, assignments: Mapping[str, str]
                  ) -> tuple[Any, list[dict[str, Any]]]:
    """Call an adapted app inside a spanguard request; return its result and spans (by start)."""
    with SpanCapture() as capture:
        with spanguard.request("adapter_test", assignments=dict(assignments)):
            if inspect.iscoroutinefunction(app):
                result = asyncio.run(app(prompt, assignments))
            else:
                result = app(prompt, assignments)
        spans = capture.spans()
    return result, spans
