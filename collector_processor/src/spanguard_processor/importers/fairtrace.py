"""fairtrace 0.1.0's own import shapes, for teams migrating their files.

fairtrace's ``import promptfoo`` reads ``[{id?, description?, prompt, vars, group_id? |
metadata.group_id?}]`` (or ``{"tests": [...]}``), and its ``import deepeval`` reads ``[{id?,
input, metadata: {seed_id? | group_id?, assignments}}]`` (or ``{"cases": [...]}``); neither is
the tool's native format. The same fields map to the same variants here, but every value is
validated (fairtrace silently stringified objects and let ids collide).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spanguard.exceptions import InputError

from ..common._json import kind_of
from ._common import (
    ImportedVariant,
    check_unique,
    line_of,
    read_structured,
    scalar_text,
)

__all__ = ["load_fairtrace_deepeval", "load_fairtrace_promptfoo"]


def _items(path: Path, key: str, expected: str) -> list[Any]:
    data = read_structured(path, expected)
    items = data[key] if isinstance(data, Mapping) and key in data else data
    if not isinstance(items, list):
        raise InputError(f"the file holds {kind_of(data)}; expected {expected}.", file=str(path))
    return items


def _assignments(raw: object, file: str, line: int | None, field: str) -> dict[str, str]:
    if not isinstance(raw, Mapping):
        raise InputError(
            "must be an object of attribute values.", file=file, line=line, field=field
        )
    return {str(k): scalar_text(v, file, line, f"{field}.{k}") for k, v in sorted(raw.items())}


def _entry(
    path: Path, index: int, item: object, text_key: str, fallback: str
) -> tuple[Mapping[str, Any], Mapping[str, Any], str, str, int | None]:
    file, line, where = str(path), line_of(item), f"[{index}]"
    if not isinstance(item, Mapping):
        raise InputError(
            f"must be an object, not {kind_of(item)}.", file=file, line=line, field=where
        )
    text = item.get(text_key)
    if not isinstance(text, str) or not text:
        raise InputError(
            "must be a non-empty string.", file=file, line=line, field=f"{where}.{text_key}"
        )
    metadata = item.get("metadata", {}) or {}
    if not isinstance(metadata, Mapping):
        raise InputError("must be an object.", file=file, line=line, field=f"{where}.metadata")
    ident = str(item.get("id") or item.get("description") or f"{fallback}-{index + 1}")
    return item, metadata, text, ident, line


def load_fairtrace_promptfoo(path: Path) -> list[ImportedVariant]:
    """Variants from fairtrace's promptfoo import shape."""
    expected = "fairtrace's promptfoo shape (a list of {prompt, vars} tests, or {tests: [...]})"
    variants = []
    for index, raw in enumerate(_items(path, "tests", expected)):
        item, metadata, prompt, ident, line = _entry(path, index, raw, "prompt", "promptfoo")
        seed = item.get("group_id") or metadata.get("group_id") or ident
        assignments = _assignments(item.get("vars", {}), str(path), line, f"[{index}].vars")
        variants.append(ImportedVariant(ident, str(seed), prompt, assignments, line))
    check_unique(variants, str(path))
    return variants


def load_fairtrace_deepeval(path: Path) -> list[ImportedVariant]:
    """Variants from fairtrace's deepeval import shape."""
    expected = "fairtrace's deepeval shape (a list of {input, metadata} cases, or {cases: [...]})"
    variants = []
    for index, raw in enumerate(_items(path, "cases", expected)):
        item, metadata, prompt, _, line = _entry(path, index, raw, "input", "deepeval")
        ident = str(item.get("id") or f"deepeval-{index + 1}")
        seed = metadata.get("seed_id") or metadata.get("group_id") or ident
        assignments = _assignments(
            metadata.get("assignments", {}), str(path), line, f"[{index}].metadata.assignments"
        )
        variants.append(ImportedVariant(ident, str(seed), prompt, assignments, line))
    check_unique(variants, str(path))
    return variants
