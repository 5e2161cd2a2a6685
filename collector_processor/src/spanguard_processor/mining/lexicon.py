"""Lexicons of protected-attribute mentions: the shipped data files and ``--lexicon`` extensions.

A lexicon file (YAML, format in ``lexicons/README.md``) describes one attribute in one of three
kinds: ``forms`` (rows of parallel words, one per value: she/he, her/his, Mary/James), ``terms``
(each value is its own word: Muslim, Jewish) or ``numeric`` (age patterns with ``{n}`` or
``{decade}``). Files naming the same attribute merge (same values required). Every problem is a
:class:`~spanguard.exceptions.InputError` naming the file, the line and the field.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from spanguard.exceptions import InputError

from ..common._json import kind_of

__all__ = [
    "AttributeLexicon",
    "FormRow",
    "Lexicon",
    "LexiconKind",
    "builtin_lexicon",
    "load_lexicon",
]


class LexiconKind(StrEnum):
    """How a lexicon file describes its attribute (the ``kind`` field)."""

    FORMS = "forms"  # rows of parallel words, one per value
    TERMS = "terms"  # each value is its own word
    NUMERIC = "numeric"  # age patterns with {n} or {decade}


_KINDS = tuple(k.value for k in LexiconKind)
_KEYS = (
    "attribute",
    "kind",
    "values",
    "case_sensitive",
    "forms",
    "blockers",
    "patterns",
    "article",
    "before_words",
    "after_words",
)
_BEFORE = ("word", "end")
_BUILTIN = ("gender", "names", "age", "ethnicity", "nationality", "religion", "disability")


@dataclass(frozen=True, slots=True)
class FormRow:
    """One word class: each value's form; ``before`` restricts it to a context (word, end)."""

    forms: Mapping[str, str]
    before: str | None = None
    case_sensitive: bool = False


@dataclass(frozen=True, slots=True)
class AttributeLexicon:
    """Everything known about one attribute, merged over its files."""

    name: str
    kind: LexiconKind
    values: tuple[str, ...]
    rows: tuple[FormRow, ...] = ()
    patterns: tuple[str, ...] = ()
    blockers: tuple[str, ...] = ()
    case_sensitive: bool = False
    article: bool = False
    before_words: frozenset[str] = frozenset()
    after_words: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Lexicon:
    attributes: tuple[AttributeLexicon, ...]

    def only(self, names: Iterable[str]) -> Lexicon:
        """The attributes named in ``names`` (all when empty)."""
        wanted = set(names)
        if not wanted:
            return self
        return Lexicon(tuple(a for a in self.attributes if a.name in wanted))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attributes)


class _File:
    """Validation of one file, with the line of every field (from the YAML node tree)."""

    def __init__(self, name: str, text: str) -> None:
        self.name = name
        self.lines: dict[str, int] = {}
        try:
            node = yaml.compose(text, Loader=yaml.SafeLoader)
            self.data: Any = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            raise InputError(
                f"is not valid YAML: {getattr(exc, 'problem', None) or exc}.",
                file=name,
                line=mark.line + 1 if mark else None,
            ) from None
        if node is not None:
            self._index("", node)

    def _index(self, path: str, node: yaml.Node) -> None:
        self.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                name = f"{path}.{key.value}" if path else str(key.value)
                self.lines[name] = key.start_mark.line + 1
                self._index(name, value)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                self._index(f"{path}[{i}]", item)

    def fail(self, field: str, message: str) -> InputError:
        probe = field
        while probe and probe not in self.lines:
            probe = probe[: max(probe.rfind("."), probe.rfind("["), 0)]
        return InputError(message, file=self.name, line=self.lines.get(probe), field=field or None)

    def strings(self, value: object, field: str, *, empty_ok: bool = False) -> tuple[str, ...]:
        if not isinstance(value, list) or (not value and not empty_ok):
            raise self.fail(field, f"must be a non-empty list of strings, got {kind_of(value)}.")
        for i, item in enumerate(value):
            if not isinstance(item, str) or not item.strip():
                raise self.fail(
                    f"{field}[{i}]",
                    f"must be a non-empty string, got {kind_of(item)}; quote numbers.",
                )
        return tuple(value)

    def flag(self, data: Mapping[str, Any], key: str) -> bool:
        value = data.get(key, False)
        if not isinstance(value, bool):
            raise self.fail(key, f"must be true or false, got {kind_of(value)}.")
        return value


def _rows(
    f: _File, data: Mapping[str, Any], values: tuple[str, ...], cs: bool
) -> tuple[FormRow, ...]:
    items = data.get("forms")
    if not isinstance(items, list) or not items:
        raise f.fail("forms", f"must be a non-empty list of rows, got {kind_of(items)}.")
    rows = []
    for i, item in enumerate(items):
        where = f"forms[{i}]"
        if not isinstance(item, Mapping):
            raise f.fail(where, f"must be a mapping of value to word, got {kind_of(item)}.")
        before = item.get("before")
        if before is not None and before not in _BEFORE:
            raise f.fail(f"{where}.before", f"must be one of {', '.join(_BEFORE)}, got {before!r}.")
        forms = {k: v for k, v in item.items() if k != "before"}
        missing = [v for v in values if v not in forms]
        extra = sorted(str(k) for k in forms if k not in values)
        if missing or extra:
            name = missing[0] if missing else extra[0]
            problem = "is missing" if missing else "is not one of the values"
            raise f.fail(
                f"{where}.{name}",
                f"{problem}; every row gives one word for each of {', '.join(values)}.",
            )
        for value, word in forms.items():
            if not isinstance(word, str) or not word.strip():
                raise f.fail(
                    f"{where}.{value}", f"must be a non-empty string, got {kind_of(word)}."
                )
        rows.append(FormRow(dict(forms), before, cs))
    return tuple(rows)


def _patterns(f: _File, data: Mapping[str, Any]) -> tuple[str, ...]:
    patterns = f.strings(data.get("patterns"), "patterns")
    for i, pattern in enumerate(patterns):
        if pattern.count("{n}") + pattern.count("{decade}") != 1:
            raise f.fail(f"patterns[{i}]", "must hold exactly one {n} or {decade}.")
    return patterns


def _whole_numbers(f: _File, values: tuple[str, ...]) -> None:
    """A numeric attribute maps a mention to the nearest value, so each value is a number."""
    for i, value in enumerate(values):
        if not value.strip().isdecimal():
            raise f.fail(
                f"values[{i}]",
                f"must be a whole number (a numeric attribute's values are ages), got {value!r}.",
            )


def _parse(f: _File) -> AttributeLexicon:
    data = f.data
    if not isinstance(data, Mapping):
        raise f.fail("", f"must be a mapping (attribute, kind, values, …), got {kind_of(data)}.")
    extra = sorted(str(k) for k in data if k not in _KEYS)
    if extra:
        raise f.fail(extra[0], f"unknown field; allowed fields are {', '.join(_KEYS)}.")
    name = data.get("attribute")
    if not isinstance(name, str) or not name.isidentifier():
        raise f.fail("attribute", f"must be a name like gender or age, got {kind_of(name)}.")
    kind = data.get("kind")
    if kind not in _KINDS:
        got = repr(kind) if isinstance(kind, str) else kind_of(kind)
        raise f.fail("kind", f"must be one of {', '.join(_KINDS)}, got {got}.")
    kind = LexiconKind(kind)
    values = f.strings(data.get("values"), "values")
    if len(set(values)) != len(values) or len(values) < 2:
        raise f.fail("values", "must list at least two distinct values.")
    if kind == LexiconKind.NUMERIC:
        _whole_numbers(f, values)
    cs = f.flag(data, "case_sensitive")
    return AttributeLexicon(
        name=name,
        kind=kind,
        values=values,
        rows=_rows(f, data, values, cs) if kind == LexiconKind.FORMS else (),
        patterns=_patterns(f, data) if kind == LexiconKind.NUMERIC else (),
        blockers=f.strings(data.get("blockers", []), "blockers", empty_ok=True),
        case_sensitive=cs,
        article=f.flag(data, "article"),
        before_words=frozenset(
            w.lower()
            for w in f.strings(data.get("before_words", []), "before_words", empty_ok=True)
        ),
        after_words=frozenset(
            w.lower() for w in f.strings(data.get("after_words", []), "after_words", empty_ok=True)
        ),
    )


def _merge(into: AttributeLexicon, more: AttributeLexicon, f: _File) -> AttributeLexicon:
    if more.kind != into.kind or more.values != into.values:
        raise f.fail(
            "values",
            f"attribute '{more.name}' already exists with kind {into.kind} "
            f"and values {', '.join(into.values)}; an extension must use the "
            "same kind and values (or a new attribute name).",
        )
    return replace(
        into,
        rows=into.rows + more.rows,
        patterns=into.patterns + more.patterns,
        blockers=into.blockers + more.blockers,
        before_words=into.before_words | more.before_words,
        after_words=into.after_words | more.after_words,
    )


def _combine(files: Sequence[_File]) -> Lexicon:
    merged: dict[str, AttributeLexicon] = {}
    for f in files:
        parsed = _parse(f)
        known = merged.get(parsed.name)
        merged[parsed.name] = parsed if known is None else _merge(known, parsed, f)
    return Lexicon(tuple(merged.values()))


def _builtin_files() -> list[_File]:
    folder = resources.files(__package__).joinpath("lexicons")
    return [
        _File(f"lexicons/{n}.yaml", folder.joinpath(f"{n}.yaml").read_text("utf-8"))
        for n in _BUILTIN
    ]


def builtin_lexicon() -> Lexicon:
    """The shipped lexicons (package data, no network)."""
    return _combine(_builtin_files())


def load_lexicon(extra: Sequence[Path] = ()) -> Lexicon:
    """The shipped lexicons extended by ``extra`` files (``--lexicon``), in order."""
    files = _builtin_files()
    for path in extra:
        try:
            text = path.read_bytes().decode("utf-8-sig")
        except OSError as exc:
            raise InputError(f"cannot be read: {exc.strerror or exc}.", file=str(path)) from None
        except UnicodeDecodeError as exc:
            raise InputError(f"is not valid UTF-8 (byte {exc.start}).", file=str(path)) from None
        files.append(_File(str(path), text))
    return _combine(files)
