"""The span store — batches in, span records out (SQLite, one file); agent traces are
assembled from them by the readers (``inputs.stored_traces``).

``span_store.SpanStore`` is the entry point: it stores received batches still encoded, indexes
their spans by trace (``index``), marks traces released, and reads them back by trace through
per-trace tables (``view``). ``schema`` is the file's layout and its checksums, ``opening`` the
checks made when a store is opened, ``upgrade`` older versions, ``lock`` the one-writer lock,
``read`` decoding stored batches, ``pagescan`` the rows read without SQLite (``store
recover``). Imports ``ingest`` and ``common``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..common.lazy import lazy_exports

if TYPE_CHECKING:
    from .span_store import SpanStore

__all__ = [
    "SpanStore",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "SpanStore": ".span_store",
    },
)
