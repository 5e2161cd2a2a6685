"""User feedback: labels as trace2eval reads them, numbers read on their own scale.

trace2eval maps every number ≤ 2 to negative, so ``thumbs: 1`` (a thumbs-up) and an eval
``score: 0.93`` both become complaints. Here the scale of each feedback field is inferred from
all the numbers that field holds in the log, then each number is read on that scale. A field
whose numbers are all one whole number shows no scale (``rating: 1`` alone may be a 1-5
rating's worst or a thumbs-up): it is read as trace2eval reads it (≤ 2 negative, ≥ 4
positive), except ``thumbs``, whose 1 is up.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from ..vocabulary import FeedbackLabel

__all__ = ["NumericFeedback", "Scale", "infer_scale", "label_feedback", "read_on_scale"]

_NEGATIVE = {
    "negative",
    "neg",
    "bad",
    "down",
    "thumbs_down",
    "thumbsdown",
    "差评",
    "不满意",
    "无帮助",
}
_POSITIVE = {"positive", "pos", "good", "up", "thumbs_up", "thumbsup", "好评", "满意", "有帮助"}
_NONE = {"", "none", "null", "unknown", "-"}


@dataclass(frozen=True, slots=True)
class NumericFeedback:
    """A number found in a feedback field, waiting for the field's scale to be known."""

    key: str
    value: float


def label_feedback(value: object, key: str) -> FeedbackLabel | NumericFeedback | None:
    """``"negative"``/``"positive"``/None for labels; numbers are returned for later scaling."""
    if value is None:
        return None
    if isinstance(value, bool):
        return FeedbackLabel.POSITIVE if value else FeedbackLabel.NEGATIVE
    text = str(value).strip().lower()
    if text in _NONE:
        return None
    if text in _NEGATIVE:
        return FeedbackLabel.NEGATIVE
    if text in _POSITIVE:
        return FeedbackLabel.POSITIVE
    try:
        number = float(text)
    except ValueError:
        return None
    if not math.isfinite(number):
        return None
    return NumericFeedback(key, number)


@dataclass(frozen=True, slots=True)
class Scale:
    """How to read one field's numbers: at or below ``negative_at`` is a complaint."""

    name: str
    negative_at: float
    positive_at: float


_BINARY01 = Scale("thumbs (0 = down, 1 = up)", 0.0, 1.0)
_BINARY11 = Scale("thumbs (-1 = down, 0 = none, 1 = up)", -1.0, 1.0)
_UNIT = Scale("0-1 score", 0.25, 0.75)
_FIVE = Scale("1-5 rating", 2.0, 4.0)
_TEN = Scale("1-10 rating", 4.0, 7.0)
_HUNDRED = Scale("0-100 score", 25.0, 75.0)
#: trace2eval 0.5.1's reading of any number, for a field whose numbers reveal no scale.
_TRACE2EVAL = Scale("trace2eval (<= 2 negative, >= 4 positive)", 2.0, 4.0)


def infer_scale(key: str, values: Iterable[float]) -> Scale | None:
    """The scale a field's numbers are on, or None when they fit none (then ignored)."""
    numbers = sorted(set(values))
    if not numbers:
        return None
    low, high = numbers[0], numbers[-1]
    integral = all(float(v).is_integer() for v in numbers)
    if integral and len(numbers) == 1 and key != "thumbs":
        return _TRACE2EVAL
    if key == "thumbs" or (integral and low >= -1 and high <= 1 and low <= 0):
        return _BINARY11 if low < 0 else _BINARY01
    if low < 0:
        return None
    if high <= 1:
        return _UNIT
    if high <= 5:
        return _FIVE
    if high <= 10:
        return _TEN
    if high <= 100:
        return _HUNDRED
    return None


def read_on_scale(value: float, scale: Scale | None) -> FeedbackLabel | None:
    if scale is None:
        return None
    if value <= scale.negative_at:
        return FeedbackLabel.NEGATIVE
    if value >= scale.positive_at:
        return FeedbackLabel.POSITIVE
    return None
