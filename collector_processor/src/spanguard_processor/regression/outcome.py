"""The class of an answer: what the agent decided, read from the answer text alone.

One deterministic classifier (docs/regression.md, "Outcome classes"), tried in this order:

1. ``refusal`` — a fallback phrase (:func:`~.textnorm.detect_fallback`): the agent did not answer.
2. A JSON object with a ``decision``, ``outcome``, ``status`` or ``result`` key (the first present)
   whose value is a string: that value, mapped to ``approve``/``decline``/``refer`` through the
   decision words below, else the value itself lowercased (``"pending"``).
3. The opening of the answer (its first sentence, at most :data:`OPENING_CHARS` characters):
   ``refer`` when it hands the request on (underwriter, specialist, human agent, escalated,
   referred, passed/forwarded/transferred to), else ``approve`` or ``decline`` when it starts
   with a decision word (``approved``, ``accepted``, ``granted`` … / ``declined``,
   ``rejected``, ``denied``, ``unfortunately``, ``we are sorry`` …).
4. Otherwise the answer's structure: ``structured`` (a JSON object or array), ``empty`` or
   ``text``.
"""

from __future__ import annotations

import re
from enum import StrEnum

from ..common._json import parse_json
from .textnorm import detect_fallback

__all__ = ["DECISION_KEYS", "OPENING_CHARS", "AnswerClass", "classify_answer"]


class AnswerClass(StrEnum):
    """The built-in classes; a JSON decision value outside them is its own class."""

    APPROVE = "approve"
    DECLINE = "decline"
    REFER = "refer"
    REFUSAL = "refusal"
    STRUCTURED = "structured"
    TEXT = "text"
    EMPTY = "empty"


#: The JSON keys that carry a decision, first present wins.
DECISION_KEYS = ("decision", "outcome", "status", "result")
#: How much of a plain answer is read for its decision.
OPENING_CHARS = 160

_REFER = re.compile(
    r"underwriter|specialist|human agent|escalat|referred|refer(?:ring)? (?:you|it|this|your)|"
    r"(?:passed|forwarded|transferred|handed(?: over)?) (?:on )?to",
    re.IGNORECASE,
)
_APPROVE = re.compile(
    r"^\W*(?:approved?|accepted|granted|good news|congratulations|we can (?:lend|offer))",
    re.IGNORECASE,
)
_DECLINE = re.compile(
    r"^\W*(?:declined?|rejected|denied|refused|unfortunately|regrettably|"
    r"we(?: are|'re) sorry|sorry\b|we cannot|we can't|we can not)",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s|\n")


def _decision_word(text: str) -> str | None:
    if _REFER.search(text):
        return AnswerClass.REFER
    if _APPROVE.search(text):
        return AnswerClass.APPROVE
    if _DECLINE.search(text):
        return AnswerClass.DECLINE
    return None


def _json_class(stripped: str) -> str | None:
    if not stripped.startswith(("{", "[")):
        return None
    try:
        payload = parse_json(stripped)
    except ValueError:
        return None
    if isinstance(payload, dict):
        for key in DECISION_KEYS:
            value = payload.get(key)
            if isinstance(value, str) and value.strip():
                return _decision_word(value.strip()) or value.strip().lower()
    return AnswerClass.STRUCTURED if isinstance(payload, dict | list) else None


def classify_answer(output: str) -> str:
    """The class of ``output`` (an :class:`AnswerClass` value, or a JSON decision value)."""
    stripped = output.strip()
    if not stripped:
        return AnswerClass.EMPTY
    if detect_fallback(output) is not None:
        return AnswerClass.REFUSAL
    found = _json_class(stripped)
    if found is not None:
        return found
    opening = _SENTENCE_END.split(stripped[:OPENING_CHARS], maxsplit=1)[0]
    return _decision_word(opening) or AnswerClass.TEXT
