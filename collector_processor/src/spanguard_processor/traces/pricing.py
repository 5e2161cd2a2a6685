"""Cost from token counts and a user-supplied price table (``--prices FILE``).

The table is a JSON or YAML object mapping a model name to its prices in US dollars per
million tokens::

    {"gpt-4o-mini": {"input": 0.15, "output": 0.60}}

A call is priced by its response model, else its request model: an exact name first, else the
longest table entry that the name starts with followed by ``-`` (so ``gpt-4o-mini`` prices the
snapshot ``gpt-4o-mini-2024-07-18``). Costs the spans carry are never replaced. A request's
``cost_usd`` is filled in only when every one of its model calls has a cost.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from spanguard.exceptions import TraceFormatError

from ..common.yamlio import load_bounded
from .model import AgentTrace, LLMCall

__all__ = ["Price", "apply_prices", "load_prices", "price_of"]


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million input and output tokens."""

    input: float
    output: float


def _rate(value: object, path: Path, field: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
    ):
        raise TraceFormatError(
            "must be a non-negative number (US dollars per million tokens).",
            file=str(path),
            field=field,
        )
    return float(value)


def load_prices(path: Path) -> dict[str, Price]:
    """Read and validate a price table; errors name the file, line (for syntax) and field."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceFormatError(f"cannot be read: {exc}.", file=str(path)) from None
    try:
        data = json.loads(text) if path.suffix == ".json" else load_bounded(text)
    except json.JSONDecodeError as exc:
        raise TraceFormatError(
            f"is not valid JSON: {exc.msg}.", file=str(path), line=exc.lineno
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise TraceFormatError(
            f"is not valid YAML: {getattr(exc, 'problem', exc)}.",
            file=str(path),
            line=mark.line + 1 if mark is not None else None,
        ) from None
    if not isinstance(data, Mapping) or not data:
        raise TraceFormatError(
            'must map model names to prices, e.g. {"gpt-4o-mini": '
            '{"input": 0.15, "output": 0.60}}.',
            file=str(path),
        )
    prices: dict[str, Price] = {}
    for model, entry in data.items():
        if not isinstance(model, str) or not model.strip():
            raise TraceFormatError(
                "model names must be non-empty strings.", file=str(path), field=str(model)
            )
        if not isinstance(entry, Mapping):
            raise TraceFormatError(
                'must be an object {"input": …, "output": …}.', file=str(path), field=model
            )
        unknown = sorted(str(k) for k in entry if k not in ("input", "output"))
        if unknown:
            raise TraceFormatError(
                "unknown key; allowed keys are input, output.",
                file=str(path),
                field=f"{model}.{unknown[0]}",
            )
        for side in ("input", "output"):
            if side not in entry:
                raise TraceFormatError(
                    "is required and missing.", file=str(path), field=f"{model}.{side}"
                )
        prices[model] = Price(
            _rate(entry["input"], path, f"{model}.input"),
            _rate(entry["output"], path, f"{model}.output"),
        )
    return prices


def _lookup(name: str | None, prices: Mapping[str, Price]) -> Price | None:
    if not name:
        return None
    if name in prices:
        return prices[name]
    prefixes = [m for m in prices if name.startswith(m + "-")]
    return prices[max(prefixes, key=len)] if prefixes else None


def price_of(call: LLMCall, prices: Mapping[str, Price]) -> float | None:
    """The cost of one call from the table, or None (no tokens, or no price for its model)."""
    price = _lookup(call.response_model, prices) or _lookup(call.request_model, prices)
    if price is None or (call.input_tokens is None and call.output_tokens is None):
        return None
    return ((call.input_tokens or 0) * price.input + (call.output_tokens or 0) * price.output) / 1e6


def apply_prices(trace: AgentTrace, prices: Mapping[str, Price]) -> AgentTrace:
    """``trace`` with the costs the table can give filled in (span costs win)."""
    if not trace.llm_calls:
        return trace
    calls = tuple(
        call
        if call.cost_usd is not None
        else dataclasses.replace(call, cost_usd=price_of(call, prices))
        for call in trace.llm_calls
    )
    cost = trace.cost_usd
    if cost is None and all(c.cost_usd is not None for c in calls):
        cost = sum(c.cost_usd for c in calls if c.cost_usd is not None)
    return dataclasses.replace(trace, llm_calls=calls, cost_usd=cost)
