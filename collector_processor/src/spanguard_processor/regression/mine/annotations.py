"""Human-written expectations (``expectations.jsonl``), keyed by question, not by case id.

Format as trace2eval 0.5.1's: split on ``\\n``; blank, ``#`` and ``//`` lines skipped;
``{"input", "expect", "note"}`` per line; an empty ``expect`` is an unfilled placeholder. Unlike
trace2eval, ``required`` is allowed, values are validated (a bad line is reported and skipped,
never a crash), an annotation matches a case through *any* phrasing of its question, and
annotations that match no case are reported as orphans.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from spanguard.exceptions import InputError

from ...common._json import parse_json
from ..case import Case, Check
from ..checks import CheckKind
from ..textnorm import fold
from .expect import ANNOTATABLE_KEYS, checks_from_expect, validate_expect

__all__ = ["Annotation", "AnnotationSet", "load_annotations", "merge_checks", "render_template"]


@dataclass(frozen=True, slots=True)
class Annotation:
    input: str
    expect: Mapping[str, object]
    note: str
    line: int

    @property
    def key(self) -> str:
        return fold(self.input)

    @property
    def checks(self) -> list[Check]:
        return checks_from_expect(self.expect)


@dataclass
class AnnotationSet:
    path: Path | None = None
    filled: list[Annotation] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    exists: bool = False

    def lookup(self, keys: list[str]) -> Annotation | None:
        """The first filled annotation whose folded input equals one of ``keys`` (in order)."""
        for key in keys:
            for annotation in self.filled:
                if annotation.key == key:
                    return annotation
        return None


def _problem(name: str, line: int, message: str, field: str | None = None) -> str:
    return str(
        InputError(message.rstrip(".") + "; line skipped.", file=name, line=line, field=field)
    )


def _parse(payload: Mapping[str, object], name: str, number: int) -> Annotation | str:
    raw = payload.get("expect")
    expect = raw if isinstance(raw, dict) else {}
    unknown = sorted(set(expect) - ANNOTATABLE_KEYS)
    if unknown:
        return _problem(
            name,
            number,
            f"unknown check type(s) {unknown}; allowed: {sorted(ANNOTATABLE_KEYS)}.",
            "expect",
        )
    bad = validate_expect(expect)
    if bad is not None:
        return _problem(name, number, bad[1], f"expect.{bad[0]}")
    text = str(payload.get("input", "")).strip()
    if not text:
        return _problem(name, number, "has no 'input' field.")
    return Annotation(text, expect, str(payload.get("note", "")).strip(), number)


def load_annotations(path: Path) -> AnnotationSet:
    """Load an expectations file; a missing file means no annotations."""
    result = AnnotationSet(path=path)
    if not path.is_file():
        return result
    result.exists = True
    name = path.as_posix()
    data = path.read_bytes()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for number, raw in enumerate(data.split(b"\n"), 1):
        try:
            line = raw.decode("utf-8").strip()
        except UnicodeDecodeError as exc:
            result.warnings.append(
                _problem(name, number, f"is not valid UTF-8 (byte {exc.start + 1})")
            )
            continue
        if not line or line.startswith(("#", "//")):
            continue
        try:
            payload = parse_json(line)
        except json.JSONDecodeError as exc:
            result.warnings.append(_problem(name, number, f"is not valid JSON ({exc.msg})"))
            continue
        if not isinstance(payload, dict):
            result.warnings.append(_problem(name, number, "is not a JSON object"))
            continue
        parsed = _parse(payload, name, number)
        if isinstance(parsed, str):
            result.warnings.append(parsed)
        elif parsed.expect:
            result.filled.append(parsed)
    return result


def merge_checks(inferred: list[Check], human: list[Check]) -> list[Check]:
    """Overlay human checks type by type; ``not_fallback`` first, nothing removed."""
    first = CheckKind.NOT_FALLBACK  # trace2eval's order: the fallback check leads
    by_type: dict[str, Check] = {check.type: check for check in inferred}
    for check in human:
        by_type[check.type] = check
    ordered = [by_type.pop(first)] if first in by_type else []
    ordered.extend(by_type.values())
    if not ordered or ordered[0].type != first:
        ordered.insert(0, Check.of(first))
    return ordered


_TEMPLATE_HEADER = """\
// trace2eval expectations -- one JSON object per line, '//' comments allowed.
//
// Why these cases are listed: their failure happened around the call, not in
// the answer, so no check on the output text can reproduce it. Write down what
// a correct answer looks like and they become real gates.
//
// Available keys inside 'expect' (same vocabulary as a trace's own expect block):
//   min_chars, max_chars, contains, not_contains, regex, json, not_fallback
//
// When you are done, save this file as expectations.jsonl and rebuild.
// Matching is on 'input', folded for case/space/punctuation -- so edit the
// wording of 'note' freely, but leave 'input' alone.
"""


def render_template(cases: Sequence[Case]) -> str:
    lines = [_TEMPLATE_HEADER, "\n"]
    for case in cases:
        signals = ", ".join(signal.name for signal in case.signals)
        payload: dict[str, object] = {
            "input": case.input,
            "expect": {},
            "note": f"TODO: fill in expect. ({signals})",
        }
        lines.append(json.dumps(payload, ensure_ascii=False) + "\n")
    return "".join(lines)
