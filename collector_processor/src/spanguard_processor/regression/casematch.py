"""How a new request is recognised as one of a case's (``match`` in ``cases.jsonl``).

Recorded traffic from another day does not repeat day 1's questions: the order numbers,
amounts and names are new. ``cases build`` therefore stores with each case of agent traffic
its **template** — its question with every value a slot (:func:`~.textnorm.slot_values`) —
and, when outcome paths split that template by an input feature (:mod:`.mine.paths`), the
feature and its range, one :class:`Condition` per level of the split (the answer class, then
the process): a request whose values fall in that range takes the case's path.

The input features are defined here once, for the build that finds them and the run that
reads them: the numeric slots of a question (:func:`slot_numbers`; ids and dates are not
numbers), the ratio of two of them, and the words of three letters or more
(:func:`input_words`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .textnorm import slot_texts, slot_values

__all__ = ["CaseMatch", "Condition", "input_words", "slot_numbers"]

_NUMBER = re.compile(r"[$€£¥₹]?([0-9][0-9,]*(?:\.[0-9]+)?)%?")
_WORD = re.compile(r"[^\W\d_]{3,}")


def _number(text: str) -> float | None:
    match = _NUMBER.fullmatch(text)
    return float(match.group(1).replace(",", "")) if match else None


def slot_numbers(text: str) -> list[float | None]:
    """Each value of ``text`` as a number, in order (None: an id, a date … not a number)."""
    return [_number(t) for t in slot_texts(text)]


def input_words(text: str) -> set[str]:
    """The words of ``text`` (three letters or more, lower-cased), values left out."""
    return set(_WORD.findall(slot_values(text).lower()))


def _float(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _index(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


@dataclass(frozen=True, slots=True)
class Condition:
    """One input feature's range that explains a case's path within its template: a numeric
    slot (``slot``, the ``slot``-th value of the question), the ratio of two (``slot`` /
    ``over``), or a word's presence (``word``, ``present``). ``low``..``high`` is the range its
    day-1 requests spanned; a request matches when its value lies strictly between ``above``
    and ``below``, the nearest values of another path's requests (None: unbounded).

    ``also``: every other feature that separated the same day-1 requests from the rest (two
    features that move together on day 1: a loan's amount and the applicant's income); a new
    request takes the path only when all of them agree (:meth:`agrees`)."""

    slot: int | None = None
    over: int | None = None
    word: str | None = None
    present: bool = True
    low: float | None = None
    high: float | None = None
    above: float | None = None
    below: float | None = None
    also: tuple[Condition, ...] = ()

    def value(self, numbers: Sequence[float | None]) -> float | None:
        """The feature's value for a question's :func:`slot_numbers`."""
        if self.slot is None or self.slot >= len(numbers):
            return None
        top = numbers[self.slot]
        if self.over is None:
            return top
        bottom = numbers[self.over] if self.over < len(numbers) else None
        return None if top is None or not bottom else top / bottom

    def holds(self, numbers: Sequence[float | None], words: set[str]) -> bool:
        if self.word is not None:
            return (self.word in words) == self.present
        value = self.value(numbers)
        if value is None:
            return False
        return (self.above is None or value > self.above) and (
            self.below is None or value < self.below
        )

    def agrees(self, numbers: Sequence[float | None], words: set[str]) -> bool | None:
        """Whether a request takes the path: True when this feature and every one in
        ``also`` hold, False when none does, None when they disagree (it fits no path)."""
        verdicts = {c.holds(numbers, words) for c in (self, *self.also)}
        return verdicts.pop() if len(verdicts) == 1 else None

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object]
        if self.word is not None:
            out = {"word": self.word, "present": self.present}
        else:
            out = {"slot": self.slot}
            if self.over is not None:
                out["over"] = self.over
            out.update(low=self.low, high=self.high, above=self.above, below=self.below)
        if self.also:
            out["also"] = [c.to_dict() for c in self.also]
        return out

    @classmethod
    def from_dict(cls, data: object) -> Condition | None:
        """The condition of a ``when`` entry; None for ``null`` or a malformed entry."""
        if not isinstance(data, Mapping):
            return None
        extra = data.get("also", [])
        also = [cls.from_dict(c) for c in extra] if isinstance(extra, list) else [None]
        if any(c is None or c.also for c in also):
            return None  # a malformed ``also``: the entry is malformed
        checked = tuple(c for c in also if c is not None)
        if isinstance(data.get("word"), str):
            return cls(word=data["word"], present=data.get("present") is not False, also=checked)
        slot = _index(data.get("slot"))
        if slot is None:
            return None
        return cls(
            slot,
            _index(data.get("over")),
            low=_float(data.get("low")),
            high=_float(data.get("high")),
            above=_float(data.get("above")),
            below=_float(data.get("below")),
            also=checked,
        )


@dataclass(frozen=True, slots=True)
class CaseMatch:
    """A case's template and, per level of its template's split into paths, the condition
    its requests meet (None: the level's most common path, which takes every request no
    other path's condition claims)."""

    template: str
    when: tuple[Condition | None, ...] = ()
    #: A wording variant's own case: its wording (values as slots), which tells it apart from
    #: the template's case of the same path.
    wording: str | None = None

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"template": self.template}
        if self.when:
            out["when"] = [c.to_dict() if c is not None else None for c in self.when]
        if self.wording is not None:
            out["wording"] = self.wording
        return out

    @classmethod
    def from_dict(cls, data: object) -> CaseMatch | None:
        if not isinstance(data, Mapping) or not isinstance(data.get("template"), str):
            return None
        when = data.get("when")
        levels = [Condition.from_dict(c) for c in when] if isinstance(when, list) else []
        wording = data.get("wording")
        return cls(data["template"], tuple(levels), wording if isinstance(wording, str) else None)
