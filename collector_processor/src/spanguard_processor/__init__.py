"""spanguard's processor: OTLP ingest, trace assembly, store, conversion, evaluators and CLI.

The names below load on first use, so that importing a submodule — the console script's
dependency check above all (``_entry``) — does not import the processor's dependencies."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .common.lazy import lazy_exports

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

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "AgentTrace": ".traces.model",
        "ProcessTrace": ".traces.model",
        "RetrievedDocument": ".traces.model",
        "ToolCall": ".traces.model",
        "from_fairtrace_record": ".traces.formats",
        "to_fairtrace_record": ".traces.formats",
        "to_trace2eval_row": ".traces.formats",
    },
)
