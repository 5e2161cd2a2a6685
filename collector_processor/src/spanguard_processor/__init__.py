"""spanguard's processor: OTLP ingest, trace assembly, store, conversion, evaluators and CLI."""

from __future__ import annotations

from .formats import from_fairtrace_record, to_fairtrace_record, to_trace2eval_row
from .model import AgentTrace, ProcessTrace, RetrievedDocument, ToolCall

__all__ = [
    "AgentTrace",
    "ProcessTrace",
    "RetrievedDocument",
    "ToolCall",
    "from_fairtrace_record",
    "to_fairtrace_record",
    "to_trace2eval_row",
]
