"""DeepEval datasets (goldens) → explicit suite variants.

Reads the JSON that ``EvaluationDataset.save_as(file_type="json")`` writes (a list of single-turn
goldens: ``input``, ``expected_output``, ``context``, ``additional_metadata``, ``name`` …; a
``{"goldens": [...]}`` wrapper is accepted too), the JSON lines of ``file_type="jsonl"`` and the
CSV of ``file_type="csv"``. A golden's ``input`` is the prompt. Its counterfactual identity lives
where DeepEval keeps per-golden extras: ``additional_metadata`` (or, from CSV,
``custom_column_key_values`` and extra columns) — ``seed_id`` (or the key named by ``seed_var``),
``assignments`` (an object), or the keys named by ``attributes``. The id is ``name``, else
``additional_metadata.id``, else ``golden-N``. ``expected_output``, ``context``,
``retrieval_context``, ``expected_tools`` and the rest of ``additional_metadata`` are kept in
the variant's ``metadata``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from spanguard.exceptions import InputError

from ..common._json import kind_of, parse_json
from ._common import (
    ImportedVariant,
    check_unique,
    line_of,
    read_csv_rows,
    read_structured,
    scalar_text,
)

__all__ = ["load_deepeval"]

EXPECTED = (
    "a DeepEval dataset as EvaluationDataset.save_as() writes it (a JSON list of "
    "goldens with 'input', or its CSV)"
)
_CSV_COLUMNS = frozenset(
    {
        "input",
        "actual_output",
        "expected_output",
        "context",
        "retrieval_context",
        "tools_called",
        "expected_tools",
        "comments",
        "source_file",
        "name",
        "additional_metadata",
        "custom_column_key_values",
        "token_cost",
        "input_token_count",
        "output_token_count",
        "expectations",
    }
)
_KEPT = (
    "expected_output",
    "context",
    "retrieval_context",
    "expected_tools",
    "comments",
    "source_file",
)


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
                    raise InputError(
                        "must hold a JSON object.", file=str(path), line=number, field=key
                    ) from None
        golden["custom_column_key_values"] = {
            **extras,
            **(golden.get("custom_column_key_values") or {}),
        }
        golden["_line"] = number
        goldens.append(golden)
    return goldens


def _jsonl_goldens(path: Path) -> list[Any]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(
            f"the file cannot be read ({exc}); expected {EXPECTED}.", file=str(path)
        ) from None
    goldens = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            golden = parse_json(line)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"is not valid JSON ({exc.msg}); each line of a .jsonl dataset is one golden.",
                file=str(path),
                line=number,
            ) from None
        if isinstance(golden, dict):
            golden["_line"] = number
        goldens.append(golden)
    return goldens


def _goldens(path: Path) -> list[Any]:
    if path.suffix.lower() == ".csv":
        return _csv_goldens(path)
    if path.suffix.lower() == ".jsonl":
        return _jsonl_goldens(path)
    data = read_structured(path, EXPECTED)
    if isinstance(data, Mapping) and isinstance(data.get("goldens"), list):
        data = data["goldens"]
    if not isinstance(data, list):
        raise InputError(f"the file holds {kind_of(data)}; expected {EXPECTED}.", file=str(path))
    return data


def _kept(golden: Mapping[str, Any], extra: Mapping[str, Any], used: set[str]) -> dict[str, Any]:
    meta = {k: golden[k] for k in _KEPT if golden.get(k) not in (None, "", [])}
    rest = {k: v for k, v in extra.items() if k not in used}
    if rest:
        meta["additional_metadata"] = rest
    return meta


def load_deepeval(
    path: Path, *, attributes: Sequence[str] = (), seed_var: str | None = None
) -> list[ImportedVariant]:
    """The explicit variants of a DeepEval goldens file (see the module docstring)."""
    file = str(path)
    variants: list[ImportedVariant] = []
    keys: set[str] = set()
    for index, golden in enumerate(_goldens(path)):
        where = f"[{index}]"
        line = golden.get("_line") if isinstance(golden, dict) else None
        line = line or line_of(golden)
        if not isinstance(golden, Mapping):
            raise InputError(
                f"must be a golden object with 'input', not {kind_of(golden)}.",
                file=file,
                line=line,
                field=where,
            )
        if "turns" in golden or "scenario" in golden:
            raise InputError(
                "is a multi-turn ConversationalGolden; only single-turn goldens "
                "with 'input' can become variants.",
                file=file,
                line=line,
                field=where,
            )
        prompt = golden.get("input")
        if not isinstance(prompt, str) or not prompt.strip():
            raise InputError(
                "must be a non-empty string (the golden's prompt).",
                file=file,
                line=line,
                field=f"{where}.input",
            )
        extra: dict[str, Any] = {}
        for key in ("custom_column_key_values", "additional_metadata"):
            value = golden.get(key) or {}
            if not isinstance(value, Mapping):
                raise InputError("must be an object.", file=file, line=line, field=f"{where}.{key}")
            extra.update(value)
        keys.update(extra)
        ident = golden.get("name") or extra.get("id") or f"golden-{index + 1}"
        seed = extra.get("seed_id")
        if seed is None and seed_var is not None:
            if seed_var not in extra:
                raise InputError(
                    f"the golden has no '{seed_var}' key (named by `seed_var`).",
                    file=file,
                    line=line,
                    field=f"{where}.additional_metadata.{seed_var}",
                )
            seed = extra[seed_var]
        raw = extra.get("assignments", {})
        if not isinstance(raw, Mapping):
            raise InputError(
                "must be an object of attribute values.",
                file=file,
                line=line,
                field=f"{where}.additional_metadata.assignments",
            )
        values = dict(raw)
        for name in attributes:
            if name not in extra and name not in values:
                raise InputError(
                    f"the golden has no '{name}' attribute (named by `attributes`).",
                    file=file,
                    line=line,
                    field=f"{where}.additional_metadata.{name}",
                )
            values.setdefault(name, extra.get(name))
        assignments = {
            str(k): scalar_text(v, file, line, f"{where}.additional_metadata.{k}")
            for k, v in sorted(values.items())
        }
        used = {"id", "seed_id", "assignments", *values, *([seed_var] if seed_var else [])}
        variants.append(
            ImportedVariant(
                str(ident),
                str(seed) if seed is not None else str(ident),
                prompt,
                assignments,
                line,
                _kept(golden, extra, used),
            )
        )
    check_unique(variants, file)
    if variants and not any(v.assignments for v in variants):
        found = ", ".join(sorted(k for k in keys if k not in ("id", "seed_id"))) or "none"
        raise InputError(
            "no counterfactual attribute found: no golden has "
            "additional_metadata.assignments and no `attributes` was given; pass "
            f"`attributes` NAME for the keys that are attributes (keys found: "
            f"{found}).",
            file=file,
            field="additional_metadata",
        )
    return variants
