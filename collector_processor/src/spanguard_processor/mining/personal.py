"""Personal data in a request, scrubbed before the miner keeps, writes or prints any of it.

A mined suite is committed and run in CI, and its seeds are printed on the console: nothing in it
may identify the person who asked. :class:`Scrubber` replaces, in every request before it
becomes a template, what identifies a person by itself — e-mail addresses, URLs carrying user
information, phone numbers and other long digit runs, card and IBAN-like numbers, and person
names (the shipped first names, and the capitalised word after a first name or a title) — with a
bracketed placeholder (``[email]``), so requests that differ only by such data share one
template. A name the miner swaps (a protected-attribute mention: "Sarah" in a gender suite) is
the counterfactual slot, not personal data, and is left to the swapper.

It also finds statements of health or personal finance ("diagnosed last week", "bankrupt"):
such a template becomes a seed only when enough *recorded* distinct users share it
(docs/suite-mining.md, "Privacy"). Pattern matching cannot find everything (a street address, a
surname after no first name or title): the rules and what they cannot guarantee are in the docs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .lexicon import Lexicon, LexiconKind

__all__ = ["PLACEHOLDERS", "Scrubbed", "Scrubber", "first_names"]

#: what each kind of personal data becomes in a template and in the suite's prompts
PLACEHOLDERS = {
    "url": "[url]",
    "email": "[email]",
    "iban": "[iban]",
    "card": "[card number]",
    "phone": "[phone]",
    "number": "[number]",
    "name": "[name]",
    "surname": "[surname]",
}
# a URL with user information (scheme://user[:password]@host…): the whole URL goes
_URL_USERINFO = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/@]+@\S+")
_EMAIL = re.compile(r"[\w.+%-]+@[\w-]+(?:\.[\w-]+)+")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b")
# a run of digits with the separators phone, card and account numbers are written with
_DIGITS = re.compile(r"(?<![\w.,])\+?\(?\d[\d ().-]*\d\)?(?![\w])")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}|\d{1,2}[./-]\d{1,2}[./-]\d{2,4}")
_TITLE = frozenset(["Mr", "Mrs", "Ms", "Miss", "Mx", "Dr", "Prof", "Sir", "Madam"])
_CAPITALISED = re.compile(r"[A-Z][a-z]+(?:[-'][A-Z]?[a-z]+)?")
# Health and personal-finance statements: one person's facts, never a seed on their own.
# Written for spanguard (common English words; no list copied).
_SENSITIVE = re.compile(
    r"(?<![\w-])(?:"
    r"diagnos(?:ed|is|es)|cancer|tumou?r|chemo(?:therapy)?|hiv|aids|diabet(?:es|ic)|"
    r"depress(?:ion|ed)|anxiety|bipolar|schizophreni[ac]|dementia|alzheimer'?s|"
    r"seizures?|epilep(?:sy|tic)|miscarriage|abortion|infertil(?:e|ity)|ivf|"
    r"surgery|operation on|hospitali[sz]ed|in (?:the )?hospital|rehab|addict(?:ed|ion)|"
    r"overdose|therapist|psychiatri(?:c|st)|medication|prescription|terminal(?:ly ill)?|"
    r"illness|disease|heart attack|stroke|disorder|"
    r"bankrupt(?:cy)?|insolven(?:t|cy)|foreclos(?:ed|ure)|repossess(?:ed|ion)|evict(?:ed|ion)|"
    r"in debt|debt collectors?|arrears|garnish(?:ed|ment)|payday loan|overdrawn|"
    r"unemployed|laid off|lost (?:my|his|her|their) job|my salary|(?:i|we) earn|"
    r"can(?:no|')t (?:afford|pay)|behind on"
    r")(?![\w-])",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Scrubbed:
    """A request with its personal data replaced; ``kinds`` says what was (sorted), and
    ``sensitive`` the first health or finance statement it makes (None: none)."""

    text: str
    kinds: tuple[str, ...] = ()
    sensitive: str | None = None


def first_names(lexicon: Lexicon) -> frozenset[str]:
    """Every first name the lexicons know: the capitalised words of case-sensitive form rows
    (the shipped ``names.yaml`` and any ``--lexicon`` adding names)."""
    return frozenset(
        word
        for attribute in lexicon.attributes
        if attribute.kind == LexiconKind.FORMS
        for row in attribute.rows
        if row.case_sensitive
        for word in row.forms.values()
        if _CAPITALISED.fullmatch(word)
    )


def _overlaps(start: int, end: int, keep: Sequence[tuple[int, int]]) -> bool:
    return any(start < k_end and k_start < end for k_start, k_end in keep)


def _digits_kind(match: str) -> str | None:
    """What a run of digits is: a card, a phone, a long number, or nothing to scrub (a date,
    an amount, a short number)."""
    count = sum(c.isdigit() for c in match)
    if count < 7 or _DATE.fullmatch(match.strip("()")):
        return None
    if 13 <= count <= 19 and not match.startswith("+"):
        return "card"
    if match.startswith(("+", "(")) or re.search(r"\d[ .-]\d", match):
        return "phone"
    return "number"


class Scrubber:
    """Replaces personal data by placeholders (see the module docstring)."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        self.names = frozenset(names)

    def scrub(self, text: str, keep: Sequence[tuple[int, int]] = ()) -> Scrubbed:
        """``text`` with its personal data replaced, the spans in ``keep`` (the mentions the
        swapper will swap) left as they are."""
        found: list[tuple[int, int, str]] = []
        if "@" in text:
            for regex, kind in ((_URL_USERINFO, "url"), (_EMAIL, "email")):
                found += [(m.start(), m.end(), kind) for m in regex.finditer(text)]
        found += [(m.start(), m.end(), "iban") for m in _IBAN.finditer(text)]
        for m in _DIGITS.finditer(text):
            digits = _digits_kind(m.group(0))
            if digits is not None:
                found.append((m.start(), m.end(), digits))
        found += self._names(text, keep)
        found.sort(key=lambda f: (f[0], -f[1]))
        out, at, kinds = [], 0, set()
        for start, end, kind in found:
            if start < at or _overlaps(start, end, keep):
                continue  # inside an earlier find (a URL's e-mail), or a slot
            out += [text[at:start], PLACEHOLDERS[kind]]
            kinds.add(kind)
            at = end
        out.append(text[at:])
        sensitive = _SENSITIVE.search(text)
        return Scrubbed(
            "".join(out), tuple(sorted(kinds)), sensitive.group(0).lower() if sensitive else None
        )

    def _names(self, text: str, keep: Sequence[tuple[int, int]]) -> list[tuple[int, int, str]]:
        """First names (unless a slot) and the capitalised word right after a first name or a
        title (a surname: "Ms Smith", "Sarah Connor")."""
        found: list[tuple[int, int, str]] = []
        gaps: tuple[str, ...] = ()  # what may separate the previous first name or title
        after = 0  # … from this word, where it ended
        for m in _CAPITALISED.finditer(text):
            word = m.group(0)
            is_name, is_title = word in self.names, word in _TITLE
            if text[after : m.start()] in gaps and not is_name and not is_title:
                found.append((m.start(), m.end(), "surname"))
                gaps = ()
                continue
            if is_name:
                found.append((m.start(), m.end(), "name"))
            gaps = (" ",) if is_name else (" ", ". ") if is_title else ()
            after = m.end()
        return [f for f in found if not (f[2] == "name" and _overlaps(f[0], f[1], keep))]
