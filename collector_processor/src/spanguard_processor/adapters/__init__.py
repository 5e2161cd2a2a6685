"""Adapters: run the frameworks teams already use under ``spanguard run``.

Each adapter turns a framework object into fairtrace's app signature ``app(prompt,
assignments) -> str | {"text", "metadata"}``, records what the framework did as spanguard
spans (which become the variant's agent trace), and takes a ``trace_mapper`` hook:

=====================  ==========================================  =========================
name                   framework object                            function
=====================  ==========================================  =========================
``openai-chat``        ``openai.OpenAI`` / ``AsyncOpenAI`` client  :func:`openai_chat`
``openai-responses``   ``openai.OpenAI`` / ``AsyncOpenAI`` client  :func:`openai_responses`
``openai-agents``      ``agents.Agent``                            :func:`openai_agent`
``langchain``          a LangChain ``Runnable``                    :func:`langchain_runnable`
``langgraph``          a compiled LangGraph graph                  :func:`langgraph_graph`
=====================  ==========================================  =========================

From the command line: ``spanguard run SUITE --adapter langgraph --app mymod:graph``, with
``--adapter-option key=value`` for the adapter's keyword options. See docs/adapters.md.
"""

from __future__ import annotations

from ._base import AdapterError, App, TraceMapper
from .registry import (
    ADAPTERS,
    AdaptedApp,
    adapt,
    langchain_runnable,
    langgraph_graph,
    load_adapted_app,
    openai_agent,
    openai_chat,
    openai_responses,
)

__all__ = [
    "ADAPTERS",
    "AdaptedApp",
    "AdapterError",
    "App",
    "TraceMapper",
    "adapt",
    "langchain_runnable",
    "langgraph_graph",
    "load_adapted_app",
    "openai_agent",
    "openai_chat",
    "openai_responses",
]
