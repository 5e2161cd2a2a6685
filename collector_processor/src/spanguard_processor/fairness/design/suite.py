"""Fairness suites: loading (JSON or YAML), validation and expansion into variants.

The file format is fairtrace 0.1.0's: ``{dataset: {prompts | variants}, metrics: [...]}``.
Everything is validated before any app call, and every problem is a :class:`SuiteError` that
names the file and the field (``dataset.prompts[2].attributes.gender``). Differences from
fairtrace, on purpose: thresholds and sampling options must be numbers of the right kind
(fairtrace crashes on them after running the app), a metric type may appear once, and bad
template placeholders are messages, not tracebacks.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path
from string import Formatter
from typing import Any

import yaml

from spanguard.exceptions import SuiteError

from ...common._json import kind_of, parse_json
from ...common.yamlio import compose_bounded, load_bounded
from ..metrics import get_metric, metric_names
from ..vocabulary import Scale
from .starter import starter_suite

__all__ = [
    "MetricConfig",
    "Suite",
    "Variant",
    "load_suite",
    "parse_suite",
    "starter_suite",
    "suite_variants",
]

_SAMPLING = ("bootstrap_samples", "permutation_samples", "random_seed")
#: a metric entry's stated range: the largest per-seed difference between groups it can take
_RANGE = "max_difference"


@dataclass(frozen=True)
class Variant:
    """One prompt to send to the app, with the attribute values it was built from."""

    id: str
    seed_id: str
    prompt: str
    assignments: Mapping[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """``{id, seed_id, prompt, assignments}``: one line of ``spanguard suite variants``."""
        return {
            "id": self.id,
            "seed_id": self.seed_id,
            "prompt": self.prompt,
            "assignments": dict(self.assignments),
        }


@dataclass(frozen=True)
class MetricConfig:
    """One ``metrics`` entry: the type, its threshold and extra options (hooks, sampling).

    ``max_difference`` is the suite's statement of the largest per-seed difference between
    groups the metric can take (a count metric's range M; docs/fairness.md, "what PASS means
    for counts"); None when the suite states none."""

    type: str
    threshold: float
    options: Mapping[str, Any] = field(default_factory=dict)
    optional: bool = False  # NO_SIGNAL is reported, not gated (FAIL and INCONCLUSIVE still gate)
    max_difference: float | None = None


@dataclass(frozen=True)
class Suite:
    variants: tuple[Variant, ...]
    metrics: tuple[MetricConfig, ...]
    source: str = "<suite>"
    digest: str = ""


class _Checker:
    def __init__(self, file: str) -> None:
        self.file = file

    def fail(self, where: str, message: str) -> SuiteError:
        return SuiteError(message, file=self.file, field=where or None)

    def mapping(self, value: object, where: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(where, f"must be a mapping (an object), got {kind_of(value)}.")
        return value

    def unknown(self, obj: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> None:
        extra = sorted(str(k) for k in obj if k not in allowed)
        if extra:
            prefix = f"{where}." if where else ""
            raise self.fail(
                prefix + extra[0], f"unknown field; allowed fields are {', '.join(allowed)}."
            )

    def nonempty_list(self, value: object, where: str) -> list[Any]:
        if not isinstance(value, list) or not value:
            raise self.fail(where, f"must be a non-empty list, got {kind_of(value)}.")
        return value

    def text(self, obj: Mapping[str, Any], key: str, where: str) -> str:
        value = obj.get(key)
        if not isinstance(value, str) or not value.strip():
            got = "nothing" if key not in obj else kind_of(value)
            raise self.fail(f"{where}.{key}", f"must be a non-empty string, got {got}.")
        return value


def suite_variants(path: str | Path) -> list[dict[str, Any]]:
    """Every variant of the suite file at ``path``, in suite order, as JSON-ready
    ``{id, seed_id, prompt, assignments}`` dicts.

    This is how any harness sends suite traffic through its own stack: call the app with each
    ``prompt`` inside ``spanguard.request(seed_id=..., variant_id=id, assignments=...)`` (or
    set the same ``spanguard.*`` attributes), then ``spanguard fairness SUITE traces`` matches
    the recorded traces to the variants. Raises :class:`SuiteError` naming file and field.
    """
    return [variant.to_dict() for variant in load_suite(Path(path)).variants]


def load_suite(path: Path) -> Suite:
    """Read, validate and expand a suite file (``.yaml``/``.yml`` as YAML, anything else JSON)."""
    name = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SuiteError(f"cannot be read: {exc.strerror or exc}.", file=name) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SuiteError(f"is not valid UTF-8 (byte {exc.start}).", file=name) from None
    if path.suffix.lower() in {".yaml", ".yml"}:
        try:
            data = load_bounded(text)  # safe, bounded (common.yamlio)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 1 if mark is not None else None
            problem = getattr(exc, "problem", None) or "invalid syntax"
            raise SuiteError(f"is not valid YAML: {problem}.", file=name, line=line) from None
    else:
        try:
            data = parse_json(text)
        except json.JSONDecodeError as exc:
            raise SuiteError(
                f"is not valid JSON: {exc.msg} (column {exc.colno}).", file=name, line=exc.lineno
            ) from None
        except ValueError as exc:
            raise SuiteError(f"is not valid JSON: {exc}.", file=name) from None
    try:
        return parse_suite(data, name)
    except SuiteError as exc:
        line = _line_of_field(text, exc.field) if exc.field and exc.line is None else None
        if line is None:
            raise
        raise exc.located(line=line) from None


def _line_of_field(text: str, field: str) -> int | None:
    """The 1-based line where ``field`` (``dataset.prompts[0].id``) or its nearest present parent
    starts in a YAML or JSON text (JSON is read as YAML here, for its node positions)."""
    try:
        root = compose_bounded(text)
    except yaml.YAMLError:
        return None
    lines: dict[str, int] = {}
    stack: list[tuple[str, yaml.Node]] = [("", root)] if root is not None else []
    while stack:
        path, node = stack.pop()
        lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                name = f"{path}.{key.value}" if path else str(key.value)
                lines[name] = key.start_mark.line + 1
                stack.append((name, value))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((f"{path}[{i}]", item) for i, item in enumerate(node.value))
    while field not in lines:  # a missing field: the line of its nearest parent
        if not field:
            return None
        field = field[: max(field.rfind("."), field.rfind("["), 0)]
    return lines[field]


def parse_suite(data: object, source: str = "<suite>") -> Suite:
    """Validate a suite given as plain data and expand it into variants."""
    check = _Checker(source)
    top = check.mapping(data, "")
    check.unknown(top, ("dataset", "metrics"), "")
    if "dataset" not in top:
        raise check.fail("dataset", "is required: give dataset.prompts or dataset.variants.")
    dataset = check.mapping(top["dataset"], "dataset")
    check.unknown(dataset, ("prompts", "variants"), "dataset")
    if ("prompts" in dataset) == ("variants" in dataset):
        raise check.fail("dataset", "must define exactly one of prompts or variants.")
    if "prompts" in dataset:
        items = check.nonempty_list(dataset["prompts"], "dataset.prompts")
        variants = _expand_prompts(check, items)
    else:
        items = check.nonempty_list(dataset["variants"], "dataset.variants")
        variants = _explicit_variants(check, items)
    if "metrics" not in top:
        raise check.fail(
            "metrics", 'is required: list at least one metric, e.g. [{"type": "tool_use_parity"}].'
        )
    metrics = _metrics(check, check.nonempty_list(top["metrics"], "metrics"))
    digest = hashlib.sha256(
        json.dumps(data, sort_keys=True, default=str).encode("utf-8")
    ).hexdigest()
    return Suite(tuple(variants), tuple(metrics), source, digest)


def _placeholders(check: _Checker, template: str, where: str) -> set[str]:
    names: set[str] = set()
    try:
        parsed = list(Formatter().parse(template))
    except ValueError as exc:
        raise check.fail(
            where, f"is not a valid template ({exc}); write a literal brace as {{{{ or }}}}."
        ) from None
    for _, name, _, _ in parsed:
        if name is None:
            continue
        if name == "" or name.isdigit():
            raise check.fail(
                where, "uses a positional placeholder '{}'; name an attribute, e.g. {gender}."
            )
        if not name.isidentifier():
            raise check.fail(
                where,
                f"uses the placeholder '{{{name}}}'; only plain attribute "
                "names are allowed, e.g. {gender}.",
            )
        names.add(name)
    return names


def _expand_prompts(check: _Checker, items: list[Any]) -> list[Variant]:
    seen: set[str] = set()
    variants: list[Variant] = []
    for index, item in enumerate(items):
        where = f"dataset.prompts[{index}]"
        entry = check.mapping(item, where)
        check.unknown(entry, ("id", "prompt", "attributes", "metadata"), where)
        seed = check.text(entry, "id", where)
        if seed in seen:
            raise check.fail(
                f"{where}.id", f"duplicates the prompt id '{seed}'; ids must be unique."
            )
        seen.add(seed)
        template = check.text(entry, "prompt", where)
        attributes = check.mapping(entry.get("attributes", {}), f"{where}.attributes")
        for key, values in attributes.items():
            at = f"{where}.attributes.{key}"
            if not isinstance(key, str) or not key:
                raise check.fail(at, "an attribute name must be a non-empty string.")
            for j, value in enumerate(check.nonempty_list(values, at)):
                if not isinstance(value, str) or not value:
                    raise check.fail(
                        f"{at}[{j}]",
                        f"must be a non-empty string, got {kind_of(value)}; quote numbers.",
                    )
        check.mapping(entry.get("metadata", {}), f"{where}.metadata")
        missing = sorted(_placeholders(check, template, f"{where}.prompt") - set(attributes))
        if missing:
            raise check.fail(
                f"{where}.prompt", f"references undefined attributes: {', '.join(missing)}."
            )
        variants.extend(_expand_one(seed, template, attributes))
    return variants


def _expand_one(seed: str, template: str, attributes: Mapping[str, list[str]]) -> list[Variant]:
    if not attributes:
        return [Variant(f"{seed}::base", seed, template, {})]
    keys = sorted(attributes)
    out = []
    for number, combo in enumerate(product(*(attributes[k] for k in keys)), start=1):
        assignments = dict(zip(keys, combo, strict=True))
        out.append(Variant(f"{seed}::{number}", seed, template.format(**assignments), assignments))
    return out


def _explicit_variants(check: _Checker, items: list[Any]) -> list[Variant]:
    seen: set[str] = set()
    out = []
    for index, item in enumerate(items):
        where = f"dataset.variants[{index}]"
        entry = check.mapping(item, where)
        check.unknown(entry, ("id", "seed_id", "prompt", "assignments", "metadata"), where)
        ident = check.text(entry, "id", where)
        if ident in seen:
            raise check.fail(
                f"{where}.id", f"duplicates the variant id '{ident}'; ids must be unique."
            )
        seen.add(ident)
        seed = check.text(entry, "seed_id", where)
        prompt = check.text(entry, "prompt", where)
        assignments = check.mapping(entry.get("assignments", {}), f"{where}.assignments")
        for key, value in assignments.items():
            if not isinstance(key, str) or not key:
                raise check.fail(
                    f"{where}.assignments", "an assignment name must be a non-empty string."
                )
            if not isinstance(value, str) or not value:
                raise check.fail(
                    f"{where}.assignments.{key}",
                    f"must be a non-empty string, got {kind_of(value)}.",
                )
        check.mapping(entry.get("metadata", {}), f"{where}.metadata")
        out.append(Variant(ident, seed, prompt, dict(assignments)))
    return out


def _metrics(check: _Checker, items: list[Any]) -> list[MetricConfig]:
    out: list[MetricConfig] = []
    seen: set[str] = set()
    for index, item in enumerate(items):
        where = f"metrics[{index}]"
        entry = check.mapping(item, where)
        kind = entry.get("type")
        if not isinstance(kind, str) or not kind:
            raise check.fail(
                f"{where}.type",
                f"is required: name a metric type, one of {', '.join(metric_names())}.",
            )
        definition = get_metric(kind)
        if definition is None:
            raise check.fail(
                f"{where}.type",
                f"unknown metric type '{kind}'; known types are {', '.join(metric_names())}.",
            )
        if kind in seen:
            raise check.fail(
                f"{where}.type", f"the metric '{kind}' is listed twice; list each metric once."
            )
        seen.add(kind)
        allowed = (
            "type",
            "threshold",
            "optional",
            _RANGE,
            *_SAMPLING,
            *sorted(definition.options),
        )
        check.unknown(entry, allowed, where)
        threshold = _threshold(
            check, entry.get("threshold", definition.threshold), where, kind, definition.scale
        )
        max_difference = _max_difference(check, entry.get(_RANGE), where)
        for key in _SAMPLING:
            value = entry.get(key)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 0
            ):
                raise check.fail(
                    f"{where}.{key}", f"must be a non-negative integer, got {kind_of(value)}."
                )
        for key in definition.options:
            if key in entry and not isinstance(entry[key], str):
                raise check.fail(
                    f"{where}.{key}",
                    f"must be a module:function string, got {kind_of(entry[key])}.",
                )
        optional = entry.get("optional", False)
        if not isinstance(optional, bool):
            raise check.fail(
                f"{where}.optional", f"must be true or false, got {kind_of(optional)}."
            )
        options = {
            k: v for k, v in entry.items() if k not in ("type", "threshold", "optional", _RANGE)
        }
        out.append(MetricConfig(kind, threshold, options, optional, max_difference))
    return out


def _number(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)


def _threshold(
    check: _Checker, threshold: object, where: str, kind: str, scale: Scale | None
) -> float:
    """A finite number on the metric's scale: in (0, 1] for a rate, positive for a count."""
    if not _number(threshold):
        raise check.fail(
            f"{where}.threshold", f"must be a finite number, got {kind_of(threshold)}."
        )
    assert isinstance(threshold, int | float)
    if scale == Scale.RATE and not 0.0 < threshold <= 1.0:
        hint = (
            f": did you mean {threshold / 100:g}?"
            if 1.0 < threshold <= 100.0
            else " (a share between 0 and 1)."
        )
        raise check.fail(
            f"{where}.threshold",
            f"threshold {threshold:g} on a rate ({kind} lies in [0, 1]) must be in (0, 1]{hint}",
        )
    if scale in (Scale.COUNT, Scale.REAL) and threshold <= 0.0:
        raise check.fail(
            f"{where}.threshold",
            f"threshold {threshold:g} on a count ({kind}) must be a positive number.",
        )
    return float(threshold)


def _max_difference(check: _Checker, value: object, where: str) -> float | None:
    """The stated range of a metric: a positive finite number, or None."""
    if value is None:
        return None
    if not _number(value) or value <= 0:  # type: ignore[operator]
        raise check.fail(
            f"{where}.{_RANGE}",
            "must be a positive finite number (the largest per-seed difference between "
            f"groups the metric can take), got {kind_of(value)}.",
        )
    assert isinstance(value, int | float)
    return float(value)
