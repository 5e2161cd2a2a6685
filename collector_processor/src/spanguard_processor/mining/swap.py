"""Finding protected-attribute mentions in a request and swapping them, behind a small interface.

:class:`Swapper` is what the miner needs: ``detect`` a request's mentions (or say why they cannot
be swapped cleanly) and ``render`` the request with every mention set to other values.
:class:`LexiconSwapper` implements it from the lexicons, with the agreement it can fix (every
gender word of the request moves together, "her" becomes "him" or "his" by what follows, "a"/"an"
follows the new word); a learned perturber (a seq2seq rewriter) can implement the same protocol.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from .lexicon import AttributeLexicon, Lexicon

__all__ = ["Detection", "LexiconSwapper", "Mention", "Swapper"]

_B, _E = r"(?<![\w-])", r"(?![\w-])"
_FUNCTION_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "to",
        "for",
        "and",
        "or",
        "but",
        "of",
        "about",
        "with",
        "at",
        "in",
        "on",
        "from",
        "by",
        "as",
        "than",
        "if",
        "that",
        "this",
        "is",
        "was",
        "be",
        "been",
        "so",
        "too",
        "very",
        "up",
        "out",
        "off",
        "over",
        "into",
        "onto",
        "back",
        "down",
        "again",
        "now",
        "today",
        "tomorrow",
    ]
)
_NEXT_WORD = re.compile(r"\s*(\w[\w'-]*)")
_PREV_WORD = re.compile(r"([\w'’-]+)\W*$")
_ARTICLE = re.compile(r"(?<![\w-])(a|an|A|An|AN)(\s+)$")
_CONSONANT_SOUND = (
    "uni",
    "use",
    "usu",
    "eu",
    "one",
    "uk",
    "ur",
    "Uni",
    "Use",
    "Eu",
    "One",
    "Uk",
    "Ur",
)


@dataclass(frozen=True, slots=True)
class Mention:
    """One mention: where it is, what attribute and value it states, and how to rewrite it
    (``row``: the lexicon row for forms, the pattern for numbers, -1 for terms)."""

    start: int
    end: int
    attribute: str
    value: str
    row: int = -1
    decade: bool = False


@dataclass(frozen=True, slots=True)
class Detection:
    """A request's mentions in text order, or why they cannot be swapped cleanly."""

    mentions: tuple[Mention, ...] = ()
    unclean: str | None = None

    @property
    def attributes(self) -> tuple[str, ...]:
        return tuple(sorted({m.attribute for m in self.mentions}))


class Swapper(Protocol):
    """What the miner needs from a perturber."""

    def values(self, attribute: str) -> tuple[str, ...]:
        """The counterfactual values of ``attribute`` (the suite's groups), in order."""
        ...

    def detect(self, text: str) -> Detection:
        """The mentions of ``text`` (none: no protected attribute is mentioned)."""
        ...

    def render(self, text: str, mentions: Sequence[Mention], assignment: Mapping[str, str]) -> str:
        """``text`` with each mention's attribute set to ``assignment[attribute]``."""
        ...


def _alternation(words: list[str]) -> str:
    return "|".join(re.escape(w) for w in sorted(set(words), key=lambda w: (-len(w), w)))


def _match_case(original: str, word: str) -> str:
    if len(original) > 1 and original.isupper() and not word.isupper():
        return word.upper()
    if original[:1].isupper() and word[:1].islower():
        return word[:1].upper() + word[1:]
    return word


def _an(word: str) -> bool:
    """Whether ``word`` takes "an" (its first sound is a vowel)."""
    if word[:1].isdigit():
        digits = re.match(r"\d+", word)
        number = digits.group(0) if digits else ""
        return number.startswith("8") or (len(number) in (2, 5) and number[:2] in ("11", "18"))
    return word[:1].lower() in "aeiou" and not word.startswith(_CONSONANT_SOUND)


class _Attribute:
    """The compiled matchers of one attribute."""

    def __init__(self, lex: AttributeLexicon) -> None:
        self.lex = lex
        self.words: dict[str, list[tuple[int, str, str | None]]] = {}
        regexes: list[re.Pattern[str]] = []
        if lex.kind == "forms":
            for sensitive in (False, True):
                words = []
                for i, row in enumerate(lex.rows):
                    if row.case_sensitive != sensitive:
                        continue
                    for value, word in row.forms.items():
                        key = word if sensitive else word.lower()
                        self.words.setdefault(key, []).append((i, value, row.before))
                        words.append(word)
                if words:
                    flags = 0 if sensitive else re.IGNORECASE
                    regexes.append(re.compile(_B + f"(?:{_alternation(words)})" + _E, flags))
        elif lex.kind == "terms":
            flags = 0 if lex.case_sensitive else re.IGNORECASE
            regexes.append(re.compile(_B + f"(?:{_alternation(list(lex.values))})" + _E, flags))
        else:
            for pattern in lex.patterns:
                body = (
                    re.escape(pattern)
                    .replace(r"\{n\}", r"(?P<n>\d{1,3})")
                    .replace(r"\{decade\}", r"(?P<decade>[1-9]0)")
                )
                regexes.append(re.compile(_B + body + _E, re.IGNORECASE))
        self.regexes = regexes
        self.blockers = (
            re.compile(_B + f"(?:{_alternation(list(lex.blockers))})" + _E, re.IGNORECASE)
            if lex.blockers
            else None
        )
        self.lower_values = {v.lower(): v for v in lex.values}

    def find(self, text: str) -> list[Mention]:
        found: list[Mention] = []
        for index, regex in enumerate(self.regexes):
            for match in regex.finditer(text):
                mention = self._mention(text, match, index)
                if mention is not None:
                    found.append(mention)
        return found

    def _mention(self, text: str, match: re.Match[str], index: int) -> Mention | None:
        lex = self.lex
        if lex.kind == "numeric":
            group = "n" if match.groupdict().get("n") is not None else "decade"
            number = int(match.group(group)) + (5 if group == "decade" else 0)
            value = min(lex.values, key=lambda v: (abs(int(v) - number), v))
            return Mention(
                match.start(group), match.end(group), lex.name, value, index, group == "decade"
            )
        if lex.kind == "terms":
            if not self._context_ok(text, match):
                return None
            value = self.lower_values[match.group(0).lower()]
            return Mention(match.start(), match.end(), lex.name, value)
        word = match.group(0)
        options = self.words.get(word) or self.words.get(word.lower()) or []
        if not options:
            return None
        nxt = _NEXT_WORD.match(text, match.end())
        context = "word" if nxt and nxt.group(1).lower() not in _FUNCTION_WORDS else "end"
        fitting = [o for o in options if o[2] in (None, context)] or options
        row, value, _ = fitting[0]
        return Mention(match.start(), match.end(), lex.name, value, row)

    def _context_ok(self, text: str, match: re.Match[str]) -> bool:
        lex = self.lex
        if not lex.before_words and not lex.after_words:
            return True
        nxt = _NEXT_WORD.match(text, match.end())
        if lex.before_words and nxt and nxt.group(1).lower() in lex.before_words:
            return True
        prev = _PREV_WORD.search(text, 0, match.start())
        return bool(
            lex.after_words and prev and prev.group(1).lower().replace("’", "'") in lex.after_words
        )

    def replacement(self, mention: Mention, value: str) -> str:
        lex = self.lex
        if lex.kind == "numeric":
            return str(int(value) // 10 * 10) if mention.decade else value
        if lex.kind == "terms":
            return value
        return lex.rows[mention.row].forms[value]


class LexiconSwapper:
    """The :class:`Swapper` of the lexicons."""

    def __init__(self, lexicon: Lexicon) -> None:
        self.lexicon = lexicon
        self.attrs = {a.name: _Attribute(a) for a in lexicon.attributes}

    def values(self, attribute: str) -> tuple[str, ...]:
        return self.attrs[attribute].lex.values

    def detect(self, text: str) -> Detection:
        found: list[Mention] = []
        for attr in self.attrs.values():
            found.extend(attr.find(text))
        if not found:
            return Detection()
        found.sort(key=lambda m: (m.start, -m.end, m.attribute))
        kept: list[Mention] = []
        for mention in found:  # overlaps: the earliest, then the longest, wins
            if not kept or mention.start >= kept[-1].end:
                kept.append(mention)
        return Detection(tuple(kept), self._unclean(text, kept))

    def _unclean(self, text: str, mentions: list[Mention]) -> str | None:
        by_attribute: dict[str, set[str]] = {}
        for m in mentions:
            by_attribute.setdefault(m.attribute, set()).add(m.value)
        for name, values in sorted(by_attribute.items()):
            if len(values) > 1:
                return f"{name}: mentions of several values"
            blockers = self.attrs[name].blockers
            hit = blockers.search(text) if blockers is not None else None
            if hit is not None:
                return f"{name}: '{hit.group(0).lower()}' has no counterpart"
        return None

    def render(self, text: str, mentions: Sequence[Mention], assignment: Mapping[str, str]) -> str:
        out: list[str] = []
        at = 0
        for m in sorted(mentions, key=lambda m: m.start):
            out.append(text[at : m.start])
            word = _match_case(
                text[m.start : m.end],
                self.attrs[m.attribute].replacement(m, assignment[m.attribute]),
            )
            before = "".join(out[-1:])
            article = _ARTICLE.search(before)
            if article is not None:
                new = "an" if _an(word) else "a"
                out[-1] = (
                    before[: article.start()]
                    + _match_case(article.group(1), new)
                    + article.group(2)
                )
            out.append(word)
            at = m.end
        out.append(text[at:])
        return "".join(out)
