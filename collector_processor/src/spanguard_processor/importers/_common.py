"""Reading import sources and writing the explicit-variant suite they become."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from spanguard.exceptions import InputError

from ..common._json import kind_of, parse_json
from ..common.jsonio import write_text_atomic
from ..common.yamlio import load_bounded

__all__ = [
    "ImportedVariant",
    "build_suite",
    "line_of",
    "read_structured",
    "scalar_text",
    "write_records",
    "write_suite",
]


class _Located(dict):
    """A mapping read from YAML that remembers its 1-based line."""

    line: int | None = None


class _LineLoader(yaml.SafeLoader):
    pass


def _mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> _Located:
    loader.flatten_mapping(node)
    value = _Located(loader.construct_mapping(node, deep=True))
    value.line = node.start_mark.line + 1
    return value


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def line_of(value: object) -> int | None:
    """The line a YAML mapping started on, when known."""
    return value.line if isinstance(value, _Located) else None


@dataclass(frozen=True)
class ImportedVariant:
    """One explicit suite variant: ``{id, seed_id, prompt, assignments}``."""

    id: str
    seed_id: str
    prompt: str
    assignments: Mapping[str, str]
    line: int | None = None
    metadata: Mapping[str, Any] | None = None  # what the source said besides (asserts …)
    response: str | None = None  # a recorded output (promptfoo results.json)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "id": self.id,
            "seed_id": self.seed_id,
            "prompt": self.prompt,
            "assignments": dict(self.assignments),
        }
        if self.metadata:
            out["metadata"] = _plain(self.metadata)
        return out

    def record(self) -> dict[str, Any]:
        """The fairtrace scenario record of a recorded output."""
        return {
            "id": self.id,
            "seed_id": self.seed_id,
            "prompt": self.prompt,
            "assignments": dict(self.assignments),
            "response": self.response or "",
            "response_metadata": _plain(self.metadata or {}),
        }


def _plain(value: object) -> Any:
    """Plain dicts and lists (YAML's line-remembering mappings become dicts)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def read_structured(path: Path, expected: str) -> Any:
    """Parse ``path`` as YAML (``.yaml``/``.yml``) or JSON (anything else)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"the file does not exist; expected {expected}.", file=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(
            f"the file cannot be read ({exc}); expected {expected}.", file=str(path)
        ) from None
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            return load_bounded(text, _LineLoader)  # a SafeLoader subclass: safe, bounded
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            raise InputError(
                f"the file is not valid YAML ({getattr(exc, 'problem', exc)}); "
                f"expected {expected}.",
                file=str(path),
                line=mark.line + 1 if mark else None,
            ) from None
    try:
        return parse_json(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"the file is not valid JSON ({exc.msg}); expected {expected}.",
            file=str(path),
            line=exc.lineno,
        ) from None


def read_csv_rows(path: Path, expected: str) -> list[dict[str, Any]]:
    """The rows of a CSV file with a header line, as dicts."""
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            return list(csv.DictReader(handle))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(
            f"the CSV file cannot be read ({exc}); expected {expected}.", file=str(path)
        ) from None


def scalar_text(value: object, file: str, line: int | None, field: str) -> str:
    """A var or metadata value as the string an assignment needs."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    raise InputError(
        f"must be a string, number or boolean to become an assignment, not {kind_of(value)}.",
        file=file,
        line=line,
        field=field,
    )


def check_unique(variants: Sequence[ImportedVariant], file: str) -> None:
    seen: dict[str, ImportedVariant] = {}
    for variant in variants:
        first = seen.setdefault(variant.id, variant)
        if first is not variant:
            where = f" (first on line {first.line})" if first.line else ""
            raise InputError(
                f"the id '{variant.id}' is used twice{where}; ids must be unique.",
                file=file,
                line=variant.line,
                field="id",
            )


def build_suite(variants: Sequence[ImportedVariant], metrics: Iterable[str]) -> dict[str, Any]:
    """The suite: ``{"dataset": {"variants": [...]}, "metrics": [{"type": T}, ...]}``."""
    return {
        "dataset": {"variants": [v.to_dict() for v in variants]},
        "metrics": [{"type": metric} for metric in metrics],
    }


def write_suite(path: Path, suite: Mapping[str, Any], *, force: bool) -> None:
    """Write the suite as YAML (``.yaml``/``.yml``) or JSON; never overwrite unless forced."""
    if path.exists() and not force:
        raise InputError(
            "the output file already exists; choose another path or pass `force` to replace it.",
            file=str(path),
        )
    if path.suffix.lower() in (".yaml", ".yml"):
        text = yaml.safe_dump(dict(suite), sort_keys=False, allow_unicode=True)
    else:
        text = json.dumps(suite, indent=2, ensure_ascii=False) + "\n"
    write_text_atomic(path, text)


def write_records(path: Path, variants: Sequence[ImportedVariant], *, force: bool) -> int:
    """Write the recorded outputs as fairtrace scenario records (JSON lines)."""
    if path.exists() and not force:
        raise InputError(
            "the records file already exists; choose another path or pass `force` to replace it.",
            file=str(path),
        )
    rows = [v.record() for v in variants if v.response is not None]
    write_text_atomic(
        path, "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
    )
    return len(rows)
