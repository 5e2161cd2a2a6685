"""spanguard's processor: OTLP ingest, trace assembly, store, conversion, evaluators and CLI.

The names below load on first use, so that importing a submodule — the console script's
dependency check above all (``_entry``) — does not import the processor's dependencies."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .traces.formats import from_fairtrace_record, to_fairtrace_record, to_trace2eval_row
    from .traces.model import AgentTrace, ProcessTrace, RetrievedDocument, ToolCall

__all__ = [
    "AgentTrace",
    "ProcessTrace",
    "RetrievedDocument",
    "ToolCall",
    "from_fairtrace_record",
    "to_fairtrace_record",
    "to_trace2eval_row",
]

_HOMES = {
    "AgentTrace": ".traces.model",
    "ProcessTrace": ".traces.model",
    "RetrievedDocument": ".traces.model",
    "ToolCall": ".traces.model",
    "from_fairtrace_record": ".traces.formats",
    "to_fairtrace_record": ".traces.formats",
    "to_trace2eval_row": ".traces.formats",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home, __name__), name)
    globals()[name] = value
    return value
