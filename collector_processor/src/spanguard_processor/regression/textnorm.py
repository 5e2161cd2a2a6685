"""Text folding, character-bigram shingles and fallback-phrase detection.

These are trace2eval 0.5.1's definitions (in the modules of the PyPI release),
kept byte-compatible so that cases built from the same log fold, merge and flag identically.
"""

from __future__ import annotations

import re

__all__ = [
    "FALLBACK_PATTERNS",
    "SLOT",
    "detect_fallback",
    "fold",
    "shingles",
    "slot_texts",
    "slot_values",
]

_STRIP = re.compile(r"[\s，。！？、；：,.!?;:\"'“”‘’()（）\[\]【】]+")

FALLBACK_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"作为一个\s*(AI|人工智能|语言模型)",
        r"作为\s*(AI|人工智能|语言模型)",
        r"我(无法|不能|没有办法)(回答|提供|满足|帮助|处理)",
        r"抱歉[，,]?\s*我(无法|不能|不会)",
        r"对不起[，,]?\s*我(无法|不能|不会)",
        r"暂(时)?无法(回答|提供|处理)",
        r"没有(相关|足够)的?(信息|资料)来(回答|说明)",
        r"as an ai\b",
        r"i (can'?t|cannot|am unable to) (help|assist|answer|provide)",
        r"i'?m sorry,? but i (can'?t|cannot)",
        r"i don'?t have (enough )?(information|access)",
    )
)
# One alternation answers "does anything match?" in a single scan; the per-pattern loop then
# runs only on the few outputs that do, to report the first pattern's match as trace2eval does.
_ANY_FALLBACK = re.compile("|".join(f"(?:{p.pattern})" for p in FALLBACK_PATTERNS), re.IGNORECASE)


#: What a value (number, amount, id, date, time) becomes before two questions are compared.
SLOT = "#"
# A run of ASCII letters, digits and value punctuation that holds at least one digit: 52,000,
# $1,250.50, 12.5%, 2024-05-01, 01/05/2024, 09:30, ORD-10293, 3f9a2c1d. Letters of other
# scripts never belong to a slot, so CJK text around a number is kept.
_VALUE = re.compile(r"[A-Za-z0-9$€£¥₹%#._:/+-]*[0-9][A-Za-z0-9$€£¥₹%#._:/+,-]*")
# Kept outside the slot: trailing punctuation ("20,000.") and hyphenated words ("20-year-old").
_KEEP = re.compile(r"(?:-[A-Za-z]+)*[.,:/+-]*$")


def _slot(match: re.Match[str]) -> str:
    value = match.group(0)
    kept = _KEEP.search(value)
    tail = kept.group(0) if kept is not None else ""
    return SLOT + tail if any(ch.isdigit() for ch in value[: len(value) - len(tail)]) else value


def slot_values(text: str) -> str:
    """``text`` with every value replaced by :data:`SLOT`, so templated requests that differ
    only in amounts, ids or dates compare as the same words (spanguard, not trace2eval)."""
    if not any(ch.isdigit() for ch in text):
        return text
    return _VALUE.sub(_slot, text)


def slot_texts(text: str) -> list[str]:
    """The values :func:`slot_values` replaces, in order (``["$52,000", "LA-10293"]``)."""
    if not any(ch.isdigit() for ch in text):
        return []
    out = []
    for match in _VALUE.finditer(text):
        value = match.group(0)
        kept = _KEEP.search(value)
        body = value[: len(value) - len(kept.group(0))] if kept is not None else value
        if any(ch.isdigit() for ch in body):
            out.append(body)
    return out


def fold(text: str) -> str:
    """Strip, lowercase and delete whitespace and common CJK/ASCII punctuation."""
    return _STRIP.sub("", text.strip().lower())


def shingles(folded: str) -> frozenset[str]:
    """Character bigrams of an already folded text (1–2 characters give one shingle)."""
    if not folded:
        return frozenset()
    if len(folded) <= 2:
        return frozenset((folded,))
    return frozenset(folded[i : i + 2] for i in range(len(folded) - 1))


def detect_fallback(output: str) -> str | None:
    """The first fallback phrase found (patterns tried in order), or None."""
    if _ANY_FALLBACK.search(output) is None:
        return None
    for pattern in FALLBACK_PATTERNS:
        match = pattern.search(output)
        if match:
            return match.group(0)
    return None  # pragma: no cover - the alternation matched, so one pattern does
