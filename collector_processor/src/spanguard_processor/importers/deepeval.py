"""DeepEval datasets (goldens) → explicit suite variants.

Reads the JSON that ``EvaluationDataset.save_as(file_type="json")`` writes (a list of single-turn
goldens: ``input``, ``expected_output``, ``context``, ``additional_metadata``, ``name`` …; a
``{"goldens": [...]}`` wrapper is accepted too) and the CSV that ``save_as(file_type="csv")``
writes. A golden's ``input`` is the prompt. Its counterfactual identity lives where DeepEval keeps
per-golden extras: ``additional_metadata`` (or, from CSV, ``custom_column_key_values`` and extra
columns) — ``seed_id``, ``assignments`` (an object), or the keys named by ``attributes``. The id
is ``name``, else ``additional_metadata.id``, else ``golden-N``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from spanguard.exceptions import InputError

from .._json import parse_json
from ._common import (
    ImportedVariant,
    check_unique,
    line_of,
    read_csv_rows,
    read_structured,
    scalar_text,
)

__all__ = ["load_deepeval"]

EXPECTED = ("a DeepEval dataset as EvaluationDataset.save_as() writes it (a JSON list of "
            "goldens with 'input', or its CSV)")
_CSV_COLUMNS = frozenset({"input", "actual_output", "expected_output", "context",
                          "retrieval_context", "tools_called", "expected_tools", "comments",
                          "source_file", "name", "additional_metadata",
                          "custom_column_key_values"})


def _csv_goldens(path: Path) -> list[dict[str, Any]]:
    rows = read_csv_rows(path, EXPECTED)
    goldens = []
    for number, row in enumerate(rows, start=2):
        golden: dict[str, Any] = {k: v for k, v in row.items() if k in _CSV_COLUMNS and v}
        extras = {k: v for k, v in row.items() if k and k not in _CSV_COLUMNS and v}
        for key in ("additional_metadata", "custom_column_key_values"):
            if key in golden:
                try:
                    golden[key] = parse_json(golden[key])
                except json.JSONDecodeError:
                    raise InputError("must hold a JSON object.", file=str(path), line=number,
                                     field=key) from None
        golden["custom_column_key_values"] = {**extras,
                                              **(golden.get("custom_column_key_values") or {})}
        golden["_line"] = number
        goldens.append(golden)
    return goldens


def _goldens(path: Path) -> list[Any]:
    if path.suffix.lower() == ".csv":
        return _csv_goldens(path)
    data = read_structured(path, EXPECTED)
    if isinstance(data, Mapping) and isinstance(data.get("goldens"), list):
        data = data["goldens"]
    if not isinstance(data, list):
        raise InputError(f"the file holds {type(data).__name__}; expected {EXPECTED}.",
                         file=str(path))
    return data


def load_deepeval(path: Path, *, attributes: Sequence[str] = ()) -> list[ImportedVariant]:
    """The explicit variants of a DeepEval goldens file (see the module docstring)."""
    file = str(path)
    variants: list[ImportedVariant] = []
    for index, golden in enumerate(_goldens(path)):
        where = f"[{index}]"
        line = golden.get("_line") if isinstance(golden, dict) else None
        line = line or line_of(golden)
        if not isinstance(golden, Mapping):
            raise InputError(f"must be a golden object with 'input', not "
                             f"{type(golden).__name__}.", file=file, line=line, field=where)
        if "turns" in golden or "scenario" in golden:
            raise InputError("is a multi-turn ConversationalGolden; only single-turn goldens "
                             "with 'input' can become variants.", file=file, line=line,
                             field=where)
        prompt = golden.get("input")
        if not isinstance(prompt, str) or not prompt.strip():
            raise InputError("must be a non-empty string (the golden's prompt).", file=file,
                             line=line, field=f"{where}.input")
        extra: dict[str, Any] = {}
        for key in ("custom_column_key_values", "additional_metadata"):
            value = golden.get(key) or {}
            if not isinstance(value, Mapping):
                raise InputError("must be an object.", file=file, line=line,
                                 field=f"{where}.{key}")
            extra.update(value)
        ident = golden.get("name") or extra.get("id") or f"golden-{index + 1}"
        seed = extra.get("seed_id")
        raw = extra.get("assignments", {})
        if not isinstance(raw, Mapping):
            raise InputError("must be an object of attribute values.", file=file, line=line,
                             field=f"{where}.additional_metadata.assignments")
        values = dict(raw)
        for name in attributes:
            if name not in extra and name not in values:
                raise InputError(f"the golden has no '{name}' attribute (named by "
                                 "--attribute).", file=file, line=line,
                                 field=f"{where}.additional_metadata.{name}")
            values.setdefault(name, extra.get(name))
        assignments = {str(k): scalar_text(v, file, line, f"{where}.additional_metadata.{k}")
                       for k, v in sorted(values.items())}
        variants.append(ImportedVariant(str(ident), str(seed) if seed is not None
                                        else str(ident), prompt, assignments, line))
    check_unique(variants, file)
    return variants
