"""Retrieved documents: validation, and the span attributes of the contract.

A retrieval span carries ``gen_ai.retrieval.documents`` (a JSON list of ``{id, group, rank,
score}`` in rank order, ranks 1-based) and, beside it, OpenInference's
``retrieval.documents.{i}.document.*`` keys with group and rank in the JSON metadata.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from opentelemetry.trace import Span
from opentelemetry.util.types import AttributeValue

from . import semconv
from ._content import prepare_content
from ._events import content_on_span, hold_content
from ._runtime import warn_dropped_field

__all__ = ["Document", "document_attributes", "normalize_documents"]


@dataclass(frozen=True)
class Document:
    """One retrieved document. ``group`` is the user-visible group fairness compares."""

    id: str
    group: str | None = None
    rank: int | None = None
    score: float | None = None
    content: str | None = None


def _field(item: Any, name: str) -> Any:
    if isinstance(item, Mapping):
        return item.get(name)
    return getattr(item, name, None)


def _warn(where: str, label: str, name: str, why: str) -> None:
    warn_dropped_field(where, f"documents[].{name}", why, item=label)


def _one(item: Any, position: int, where: str) -> Document | None:
    label = f"document {position}"
    doc_id = _field(item, "id")
    if isinstance(doc_id, int) and not isinstance(doc_id, bool):
        doc_id = str(doc_id)
    if not isinstance(doc_id, str) or not doc_id:
        _warn(where, label, "id", "a document needs a non-empty string id; the document is skipped")
        return None
    group = _field(item, "group")
    if group is not None and not isinstance(group, str):
        _warn(where, label, "group", f"it must be a string, not {type(group).__name__}")
        group = None
    rank = _field(item, "rank")
    if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int) or rank < 1):
        _warn(
            where,
            label,
            "rank",
            "it must be an integer of at least 1; the position is used instead",
        )
        rank = None
    score = _field(item, "score")
    if score is not None:
        if (
            isinstance(score, bool)
            or not isinstance(score, int | float)
            or not math.isfinite(score)
        ):
            _warn(where, label, "score", "it must be a finite number")
            score = None
        else:
            score = float(score)
    content = _field(item, "content")
    if content is not None and not isinstance(content, str):
        _warn(where, label, "content", "it must be a string")
        content = None
    return Document(doc_id, group, rank, score, content)


def normalize_documents(items: Any, where: str) -> list[Document]:
    """Valid documents from ``items`` in rank order; bad fields dropped with a warning each.

    ``items`` is an iterable of :class:`Document`, mappings or objects with ``id``, ``group``,
    ``rank``, ``score`` (and optional ``content``). A missing rank is the 1-based position.
    """
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
        warn_dropped_field(
            where, "documents", f"expected a list of documents, got {type(items).__name__}"
        )
        return []
    docs: list[Document] = []
    for position, item in enumerate(items, start=1):
        doc = _one(item, position, where)
        if doc is not None:
            docs.append(
                doc
                if doc.rank is not None
                else Document(doc.id, doc.group, position, doc.score, doc.content)
            )
    docs.sort(key=lambda d: d.rank or 0)
    return docs


# OTel keeps at most 128 attributes per span by default and evicts the OLDEST ones first, which
# would push out gen_ai.operation.name: per-document OpenInference keys stop at this budget.
# gen_ai.retrieval.documents always lists every document (and the processor prefers it).
OPENINFERENCE_KEY_BUDGET = 96


def document_attributes(docs: list[Document]) -> dict[str, AttributeValue]:
    """The content-free attributes of a retrieval span for ``docs``."""
    summary = [
        {
            semconv.DOCUMENT_ID: d.id,
            semconv.DOCUMENT_GROUP: d.group,
            semconv.DOCUMENT_RANK: d.rank,
            semconv.DOCUMENT_SCORE: d.score,
        }
        for d in docs
    ]
    attributes: dict[str, AttributeValue] = {
        semconv.GEN_AI_RETRIEVAL_DOCUMENTS: json.dumps(
            summary, separators=(",", ":"), ensure_ascii=False
        ),
    }
    for index, d in enumerate(docs):
        if len(attributes) + 3 > OPENINFERENCE_KEY_BUDGET:
            break
        attributes[semconv.retrieval_document_key(index, semconv.DOCUMENT_ID)] = d.id
        if d.score is not None:
            attributes[semconv.retrieval_document_key(index, semconv.DOCUMENT_SCORE)] = d.score
        metadata = {semconv.DOCUMENT_GROUP: d.group, semconv.DOCUMENT_RANK: d.rank}
        attributes[semconv.retrieval_document_key(index, semconv.DOCUMENT_METADATA)] = json.dumps(
            metadata, separators=(",", ":"), ensure_ascii=False
        )
    return attributes


def set_documents(span: Span, docs: list[Document]) -> None:
    """Put ``docs`` on a retrieval span: process signals always, text only with capture on."""
    attributes = document_attributes(docs)
    span.set_attributes(attributes)
    budget = OPENINFERENCE_KEY_BUDGET + 16 - len(attributes)  # content keys: a few more
    for index, d in enumerate(docs):
        if d.content is None:
            continue
        if (
            index >= budget
            or semconv.retrieval_document_key(index, semconv.DOCUMENT_ID) not in attributes
        ):
            break
        key = semconv.retrieval_document_key(index, semconv.DOCUMENT_CONTENT)
        prepared = prepare_content(key, d.content)
        if prepared is not None:
            hold_content(span, key, prepared[0])  # for the span's content event (EVENT_ONLY)
            if content_on_span():
                span.set_attribute(key, prepared[0])
