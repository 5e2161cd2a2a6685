"""Stage 5 — every command's inputs, one reader, each input's kind told by content.

``readers.read_agent_traces_any`` reads agent traces from span stores (``stored_traces``), span
files (with the log records beside them, ``logfiles``) and agent-trace JSONL (``spanguard
traces``); ``evaluation.read_evaluation_inputs`` is the evaluators' entry point (the same, plus
fairtrace records and trace2eval rows); ``files`` opens inputs and tells their kind, ``guard``
refuses a hostile one before it is read; ``readers.ingest_files`` loads span files into a store
(redacted as ``serve`` would, or through a live ``serve``: ``file_ingest``). ``sql_source``
reads the Collector's ClickHouse tables or Parquet in an engine (``--source``), over the
exporter's schema (``sql_schema``) and its loaders (``sql_load``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..common.lazy import lazy_exports

if TYPE_CHECKING:
    from .evaluation import read_evaluation_inputs
    from .readers import ingest_files, read_agent_traces_any

__all__ = [
    "ingest_files",
    "read_agent_traces_any",
    "read_evaluation_inputs",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ingest_files": ".readers",
        "read_agent_traces_any": ".readers",
        "read_evaluation_inputs": ".evaluation",
    },
)
