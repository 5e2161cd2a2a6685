"""Recorded requests no case found exactly, matched to cases by template and input range.

Traffic from another day does not repeat day 1's questions. A case built from agent traffic
carries its template and, when its question was split into outcome paths by an input
feature, the feature's range (:class:`~..casematch.CaseMatch`). A request no case claims by
id, ``source_trace_id`` or exact question goes to a case in two steps:

1. its **template**: the case templates it is one template with (:func:`~..mine.templates.
   template_ratio`: slots aligned, at least 70 % of the words), the best-aligned one; a tie
   between two different templates is a request that fits two cases;
2. within the template, **level by level** (answer class, then process): the path whose
   condition its values meet — on every feature the condition stores (``also``: features that
   moved together on day 1); when none does, the level's most common path (the case with no
   condition at that level); when two different conditions hold, or the features of one
   condition disagree (a new application's amount in a path's range, its income not), it fits
   two cases;
3. of a path's case and the cases of its template's wording variants (``wording``), the one
   whose wording aligns best.

A request that fits two cases goes to neither, and one that fits none stays unmatched; both
are counted, and the run says so in its notes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..case import Case
from ..casematch import Condition, input_words, slot_numbers
from ..mine.templates import TEMPLATE_RATIO, template_ratio, word_multiset, words
from .outputs import OutputRecord

__all__ = ["TemplateAssignment", "assign_by_template"]

_AMBIGUOUS = -1


@dataclass(frozen=True)
class TemplateAssignment:
    """Each case's records found by template (file order), and the requests that found none."""

    by_case: dict[str, list[OutputRecord]] = field(default_factory=dict)
    ambiguous: tuple[str, ...] = ()  # the inputs of requests that fit two cases or more
    unmatched: tuple[str, ...] = ()  # the inputs of requests that fit no case

    def notes(self) -> list[str]:
        """What the run says about the requests the template stage could not place."""
        out = []
        if self.ambiguous:
            out.append(
                f"{len(self.ambiguous)} request(s) fit two or more cases (two templates "
                "aligned equally, values in the ranges of two paths, or features of one path "
                "that disagree) and went to neither; "
                f"first: {_shown(self.ambiguous[0])}"
            )
        if self.unmatched:
            out.append(
                f"{len(self.unmatched)} request(s) matched no case by id, source_trace_id, "
                f"question or template; first: {_shown(self.unmatched[0])}"
            )
        return out


def _shown(text: str) -> str:
    return repr(text if len(text) <= 80 else text[:79] + "…")


def _level(case: Case, level: int) -> Condition | None:
    assert case.match is not None
    when = case.match.when
    return when[level] if level < len(when) else None


def _by_conditions(cases: Sequence[Case], text: str) -> int | None:
    """The index (in ``cases``, one template's) of the case whose conditions ``text`` meets,
    level by level; :data:`_AMBIGUOUS` when it fits two, None when it fits none."""
    numbers, found = slot_numbers(text), input_words(text)
    candidates = list(range(len(cases)))
    depth = max(len(c.match.when) for c in cases if c.match is not None)
    for level in range(depth):
        verdicts = {
            condition: condition.agrees(numbers, found)
            for i in candidates
            if (condition := _level(cases[i], level)) is not None
        }
        if None in verdicts.values():  # the features of one path disagree: neither
            return _AMBIGUOUS
        holding = [condition for condition, verdict in verdicts.items() if verdict]
        if len(holding) > 1:
            return _AMBIGUOUS
        wanted = holding[0] if holding else None
        candidates = [i for i in candidates if _level(cases[i], level) == wanted]
        if not candidates:
            return None
    if len(candidates) > 1:  # one path's case and its wording variants': the closest wording
        tokens = words(text)
        ratios = {i: _wording_ratio(tokens, cases[i]) for i in candidates}
        top = max(ratios.values())
        candidates = [i for i in candidates if ratios[i] == top]
    return candidates[0] if len(candidates) == 1 else _AMBIGUOUS


def _wording_ratio(tokens: tuple[str, ...], case: Case) -> float:
    assert case.match is not None
    ratio = template_ratio(tokens, words(case.match.wording or case.match.template))
    return -1.0 if ratio is None else ratio


class _Templates:
    """The case templates, each with its cases (in case order), and a cache per wording."""

    def __init__(self, cases: Sequence[Case]) -> None:
        self.cases: dict[str, list[Case]] = {}
        for case in cases:
            if case.match is not None:
                self.cases.setdefault(case.match.template, []).append(case)
        self.tokens = {template: words(template) for template in self.cases}
        self.bags = {template: word_multiset(own) for template, own in self.tokens.items()}
        self.order = {template: i for i, template in enumerate(self.cases)}
        self.seen: dict[tuple[str, ...], list[str]] = {}

    def best(self, text: str) -> list[str]:
        """The templates ``text`` aligns with best (several: a tie). The words two sequences
        share bound their alignment from above (2·M / (a+b)), so templates are aligned in
        the order of that bound, until it falls below the best alignment found."""
        tokens = words(text)
        found = self.seen.get(tokens)
        if found is not None:
            return found
        bag = word_multiset(tokens)
        bounds = sorted(
            (
                (2 * len(bag & own) / (len(tokens) + len(self.tokens[t])), t)
                for t, own in self.bags.items()
            ),
            key=lambda item: (-item[0], self.order[item[1]]),
        )
        top: float | None = None
        found = []
        for bound, template in bounds:
            if bound < TEMPLATE_RATIO or (top is not None and bound < top):
                break
            ratio = template_ratio(tokens, self.tokens[template])
            if ratio is None or (top is not None and ratio < top):
                continue
            if top is None or ratio > top:
                top, found = ratio, []
            found.append(template)
        found.sort(key=self.order.__getitem__)
        self.seen[tokens] = found
        return found


def assign_by_template(
    cases: Sequence[Case], records: Sequence[OutputRecord]
) -> TemplateAssignment:
    """``records`` (those no case found exactly, in file order) assigned to ``cases`` by
    template and input range."""
    templates = _Templates(cases)
    if not templates.cases:
        return TemplateAssignment()
    by_case: dict[str, list[OutputRecord]] = {}
    ambiguous: list[str] = []
    unmatched: list[str] = []
    for record in records:
        text = record.input
        if text is None or not text.strip():
            continue
        best = templates.best(text)
        if len(best) > 1:
            ambiguous.append(text)
            continue
        if not best:
            unmatched.append(text)
            continue
        group = templates.cases[best[0]]
        index = _by_conditions(group, text)
        if index is None:
            unmatched.append(text)
        elif index == _AMBIGUOUS:
            ambiguous.append(text)
        else:
            by_case.setdefault(group[index].id, []).append(record)
    return TemplateAssignment(by_case, tuple(ambiguous), tuple(unmatched))
