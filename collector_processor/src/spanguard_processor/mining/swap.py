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

from .lexicon import AttributeLexicon, Lexicon, LexiconKind

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
_TOKEN = re.compile(r"[\w-]+")  # a maximal run, as the boundaries _B and _E delimit words
_DIGIT = re.compile(r"\d")
# a placeholder the scrubber left ("her [email]") is a word too: "her" before it is possessive
_NEXT_WORD = re.compile(r"\s*(\[?\w[\w'-]*)")
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
    """The matchers of one attribute: single words by dictionary look-up over the request's
    tokens (one pass for every attribute), numbers and multi-word terms by regex."""

    def __init__(self, lex: AttributeLexicon) -> None:
        self.lex = lex
        # word → (row, value, before); exact keys for case-sensitive rows, else lowercased
        self.exact: dict[str, list[tuple[int, str, str | None]]] = {}
        self.folded: dict[str, list[tuple[int, str, str | None]]] = {}
        regexes: list[re.Pattern[str]] = []
        if lex.kind == LexiconKind.FORMS:
            for i, row in enumerate(lex.rows):
                for value, word in row.forms.items():
                    self._word(word, (i, value, row.before), row.case_sensitive)
        elif lex.kind == LexiconKind.TERMS:
            single = [v for v in lex.values if _TOKEN.fullmatch(v)]
            for value in single:
                self._word(value, (-1, value, None), lex.case_sensitive)
            several = [v for v in lex.values if v not in single]
            if several:
                flags = 0 if lex.case_sensitive else re.IGNORECASE
                regexes.append(re.compile(_B + f"(?:{_alternation(several)})" + _E, flags))
        else:  # one scan for every pattern: each alternative holds one named group
            bodies = [
                re.escape(pattern)
                .replace(r"\{n\}", rf"(?P<n{i}>\d{{1,3}})")
                .replace(r"\{decade\}", rf"(?P<d{i}>[1-9]0)")
                for i, pattern in enumerate(lex.patterns)
            ]
            regexes.append(re.compile(_B + f"(?:{'|'.join(bodies)})" + _E, re.IGNORECASE))
        self.regexes = regexes
        self.blockers = (
            re.compile(_B + f"(?:{_alternation(list(lex.blockers))})" + _E, re.IGNORECASE)
            if lex.blockers
            else None
        )
        self.lower_values = {v.lower(): v for v in lex.values}

    def _word(self, word: str, option: tuple[int, str, str | None], sensitive: bool) -> None:
        if sensitive:
            self.exact.setdefault(word, []).append(option)
        else:
            self.folded.setdefault(word.lower(), []).append(option)

    def options(self, word: str, lower: str) -> list[tuple[int, str, str | None]] | None:
        return self.exact.get(word) or self.folded.get(lower)

    def find(self, text: str) -> list[Mention]:
        """The mentions the regexes find (numbers, multi-word terms)."""
        if not self.regexes or (
            self.lex.kind == LexiconKind.NUMERIC and _DIGIT.search(text) is None
        ):
            return []
        found: list[Mention] = []
        for regex in self.regexes:
            for match in regex.finditer(text):
                mention = self._mention(text, match)
                if mention is not None:
                    found.append(mention)
        return found

    def word_mention(
        self, text: str, token: re.Match[str], options: list[tuple[int, str, str | None]]
    ) -> Mention | None:
        """The mention a token is, if its context allows (terms) or picks its row (forms)."""
        if self.lex.kind == LexiconKind.TERMS:
            if not self._context_ok(text, token):
                return None
            return Mention(token.start(), token.end(), self.lex.name, options[0][1])
        nxt = _NEXT_WORD.match(text, token.end())
        context = "word" if nxt and nxt.group(1).lower() not in _FUNCTION_WORDS else "end"
        fitting = [o for o in options if o[2] in (None, context)] or options
        row, value, _ = fitting[0]
        return Mention(token.start(), token.end(), self.lex.name, value, row)

    def _mention(self, text: str, match: re.Match[str]) -> Mention | None:
        lex = self.lex
        if lex.kind == LexiconKind.NUMERIC:
            group = match.lastgroup or "n0"  # n<i> or d<i>: pattern i, a number or a decade
            decade = group.startswith("d")
            number = int(match.group(group)) + (5 if decade else 0)
            value = min(lex.values, key=lambda v: (abs(int(v) - number), v))
            return Mention(
                match.start(group), match.end(group), lex.name, value, int(group[1:]), decade
            )
        if not self._context_ok(text, match):
            return None
        value = self.lower_values[match.group(0).lower()]
        return Mention(match.start(), match.end(), lex.name, value)

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
        if lex.kind == LexiconKind.NUMERIC:
            return str(int(value) // 10 * 10) if mention.decade else value
        if lex.kind == LexiconKind.TERMS:
            return value
        return lex.rows[mention.row].forms[value]


class LexiconSwapper:
    """The :class:`Swapper` of the lexicons."""

    def __init__(self, lexicon: Lexicon) -> None:
        self.lexicon = lexicon
        self.attrs = {a.name: _Attribute(a) for a in lexicon.attributes}
        # every attribute's words in one table each: one look-up per token of a request
        self.exact: dict[str, list[_Attribute]] = {}
        self.folded: dict[str, list[_Attribute]] = {}
        for attr in self.attrs.values():
            for word in attr.exact:
                self.exact.setdefault(word, []).append(attr)
            for word in attr.folded:
                self.folded.setdefault(word, []).append(attr)

    def values(self, attribute: str) -> tuple[str, ...]:
        return self.attrs[attribute].lex.values

    def detect(self, text: str) -> Detection:
        found: list[Mention] = []
        for attr in self.attrs.values():
            found.extend(attr.find(text))
        exact, folded = self.exact, self.folded
        for token in _TOKEN.finditer(text):
            word = token.group(0)
            hits = exact.get(word) or folded.get(word.lower())
            for attr in hits or ():
                options = attr.options(word, word.lower())
                mention = attr.word_mention(text, token, options) if options else None
                if mention is not None:
                    found.append(mention)
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
