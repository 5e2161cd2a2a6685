"""Strict validation of agent-trace JSON: each helper checks one value and, when it is wrong,
raises a :class:`~spanguard.exceptions.TraceFormatError` that names the field (its ``path``).
Used by the ``from_dict`` of :mod:`.model` and :mod:`.parts`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, TypeAlias

from spanguard.exceptions import TraceFormatError

from ..common._json import kind_of

__all__ = [
    "JSONScalar",
    "boolean",
    "fail",
    "list_of",
    "mapping",
    "nonneg_int",
    "opt_count",
    "opt_number",
    "opt_str",
    "reject_unknown",
    "scalar",
    "str_tuple",
    "string",
]

JSONScalar: TypeAlias = str | int | float | bool | None


def fail(path: str, expected: str, value: object) -> TraceFormatError:
    return TraceFormatError(f"expected {expected}, got {kind_of(value)}.", field=path or None)


def mapping(value: object, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise fail(path, "an object", value)
    return value


def reject_unknown(obj: Mapping[str, Any], allowed: tuple[str, ...], path: str) -> None:
    unknown = sorted(str(k) for k in obj if k not in allowed)
    if unknown:
        where = f"{path}." if path else ""
        raise TraceFormatError(
            f"unknown field; allowed fields are {', '.join(allowed)}.",
            field=where + unknown[0],
        )


def list_of(value: object, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise fail(path, "a list", value)
    return value


def string(value: object, path: str) -> str:
    if not isinstance(value, str):
        raise fail(path, "a string", value)
    return value


def opt_str(value: object, path: str) -> str | None:
    return None if value is None else string(value, path)


def boolean(value: object, path: str) -> bool:
    if not isinstance(value, bool):
        raise fail(path, "true or false", value)
    return value


def opt_number(value: object, path: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise fail(path, "a number", value)
    if not math.isfinite(value):
        raise TraceFormatError("must be a finite number.", field=path)
    return float(value)


def opt_count(value: object, path: str) -> int | None:
    return None if value is None else nonneg_int(value, path)


def nonneg_int(value: object, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise fail(path, "a non-negative integer", value)
    return value


def scalar(value: object, path: str) -> JSONScalar:
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TraceFormatError("must be a finite number.", field=path)
        return value
    raise fail(path, "a string, number, boolean or null", value)


def str_tuple(value: object, path: str, *, nonempty: bool = False) -> tuple[str, ...]:
    items = tuple(string(item, f"{path}[{i}]") for i, item in enumerate(list_of(value, path)))
    if nonempty:
        for i, item in enumerate(items):
            if not item:
                raise TraceFormatError("must not be empty.", field=f"{path}[{i}]")
    return items
