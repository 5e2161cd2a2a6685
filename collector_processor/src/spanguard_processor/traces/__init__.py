"""Stage 3 — span records → agent traces, and agent traces → the peers' formats.

``model`` is the frozen :class:`~spanguard_processor.traces.model.AgentTrace` (its parts in
``parts``); ``convert.traces_from_records`` is the entry point (spans of one trace → agent
traces, with the GenAI, OpenInference and OpenLLMetry conventions), helped by ``identity``
(root, identity, question and answer), ``process`` (process trace, feedback, expectations),
``annotations`` (the one merge of late annotation spans), ``_documents`` (retrievals), ``_llm``
(LLM calls and usage) and ``_messages`` (their message text); ``formats`` writes fairtrace
records and trace2eval rows; ``pricing`` adds cost from a price table. Imports ``ingest`` and
``common`` only."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..common.lazy import lazy_exports

if TYPE_CHECKING:
    from .convert import traces_from_records
    from .model import AgentTrace

__all__ = [
    "AgentTrace",
    "traces_from_records",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "AgentTrace": ".model",
        "traces_from_records": ".convert",
    },
)
