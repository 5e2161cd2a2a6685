"""Retrieved documents of one span, from the GenAI or the OpenInference attributes.

GenAI: ``gen_ai.retrieval.documents`` holds ``[{"id", "group", "rank", "score"}]`` as a JSON
string or as a structured value. OpenInference: ``retrieval.documents.{i}.document.{id,score,
metadata}`` with group and rank inside the metadata (a JSON string or a map), and id and score
there too when the top-level keys are absent; a document without a rank gets its position + 1.
The GenAI form wins when a span carries both (spanguard writes both, describing the same
documents). Malformed entries are skipped, never guessed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from spanguard import semconv

from ..common._json import parse_json
from ..ingest.spans import AttrValue, SpanRecord
from .model import RetrievedDocument

__all__ = ["finite_number", "span_documents"]

_OI_KEY = re.compile(re.escape(semconv.RETRIEVAL_DOCUMENTS_PREFIX) + r"\.(\d+)\.document\.(\w+)$")


def _is_retrieval(span: SpanRecord) -> bool:
    attrs = span.attributes
    return (
        attrs.get(semconv.GEN_AI_OPERATION_NAME) == semconv.OP_RETRIEVAL
        or attrs.get(semconv.OPENINFERENCE_SPAN_KIND) == semconv.OI_KIND_RETRIEVER
        or semconv.GEN_AI_RETRIEVAL_DOCUMENTS in attrs
    )


def _loads(value: AttrValue) -> Any:
    if isinstance(value, str):
        try:
            return parse_json(value)
        except ValueError:
            return None
    if isinstance(value, tuple):
        return [_loads_structured(v) for v in value]
    if isinstance(value, Mapping):
        return _loads_structured(value)
    return None


def _loads_structured(value: AttrValue) -> Any:
    if isinstance(value, Mapping):
        return {k: _loads_structured(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_loads_structured(v) for v in value]
    return value


def _opt_str(value: Any) -> str | None:
    if value is None or isinstance(value, dict | list):
        return None
    return str(value)


def finite_number(value: Any) -> float | None:
    """A finite float from a number or numeric string; ``None`` for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _rank(value: Any, position: int) -> int:
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    return position + 1


def _document(item: Mapping[str, Any], position: int) -> RetrievedDocument:
    return RetrievedDocument(
        id=_opt_str(item.get(semconv.DOCUMENT_ID)),
        group=_opt_str(item.get(semconv.DOCUMENT_GROUP)),
        rank=_rank(item.get(semconv.DOCUMENT_RANK), position),
        score=finite_number(item.get(semconv.DOCUMENT_SCORE)),
    )


def _gen_ai_documents(value: AttrValue) -> list[RetrievedDocument] | None:
    items = _loads(value)
    if not isinstance(items, list):
        return None
    return [_document(item, i) for i, item in enumerate(items) if isinstance(item, Mapping)]


# LangChain retrievers leave id and score in the document's metadata (OpenInference then writes
# only .content and .metadata); the top-level keys win when present.
_META_ID_KEYS = ("id", "doc_id", "document_id")
_META_SCORE_KEYS = ("score", "relevance_score")


def _either(value: AttrValue, meta: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    if value is not None:
        return value
    for key in keys:
        found = meta.get(key)
        if found is not None and not isinstance(found, dict | list | bool):
            return found
    return None


def _openinference_documents(attrs: Mapping[str, AttrValue]) -> list[RetrievedDocument]:
    fields: dict[int, dict[str, AttrValue]] = {}
    for key, value in attrs.items():
        match = _OI_KEY.match(key)
        if match:
            fields.setdefault(int(match.group(1)), {})[match.group(2)] = value
    documents = []
    for position, index in enumerate(sorted(fields)):
        doc = fields[index]
        metadata = _loads(doc.get(semconv.DOCUMENT_METADATA))
        meta = metadata if isinstance(metadata, Mapping) else {}
        documents.append(
            _document(
                {
                    semconv.DOCUMENT_ID: _either(doc.get(semconv.DOCUMENT_ID), meta, _META_ID_KEYS),
                    semconv.DOCUMENT_SCORE: _either(
                        doc.get(semconv.DOCUMENT_SCORE), meta, _META_SCORE_KEYS
                    ),
                    semconv.DOCUMENT_GROUP: meta.get(semconv.DOCUMENT_GROUP),
                    semconv.DOCUMENT_RANK: meta.get(semconv.DOCUMENT_RANK),
                },
                position,
            )
        )
    return documents


def span_documents(span: SpanRecord) -> tuple[RetrievedDocument, ...]:
    """The documents a retrieval span returned, in rank order (empty for other spans)."""
    if not _is_retrieval(span):
        return ()
    documents = None
    if semconv.GEN_AI_RETRIEVAL_DOCUMENTS in span.attributes:
        documents = _gen_ai_documents(span.attributes[semconv.GEN_AI_RETRIEVAL_DOCUMENTS])
    if documents is None:
        documents = _openinference_documents(span.attributes)
    return tuple(sorted(documents, key=lambda d: d.rank or 0))
