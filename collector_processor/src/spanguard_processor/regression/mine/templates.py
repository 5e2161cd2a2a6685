"""Pooling the wording variants of one template into one question (docs/regression.md,
"Outcome paths").

Templated traffic varies in more than its numbers: a name, a customer type, a purpose. Past
the dedup threshold those variants are separate text clusters, and an outcome path seen 2 + 1
times over two of them is seen too rarely in each to be a case; a variant asked once whose
request took a random path is a case of that path. Before the split into outcome paths
(:mod:`.paths`), text clusters of agent requests are therefore pooled when they are **one
template**:

- the same number of values (numbers, amounts, ids, dates: :func:`~..textnorm.slot_texts`),
- an alignment of their words (:class:`difflib.SequenceMatcher`, values as one token) that
  matches every value of one to the value at the same position in the other — the slots line
  up, so a path's slot-value run is read over the whole pool, and
- at least :data:`TEMPLATE_RATIO` of their words matched (twice the matched words over both
  lengths).

Each cluster joins the first-created pool whose founder it matches (as text clusters do), the
candidates coming from an exact prefix-filtered index over word sets (:mod:`.dedup`): word
matches bound the ratio from above, so the index misses no pool the check would accept.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from difflib import SequenceMatcher

from ..textnorm import SLOT, slot_texts, slot_values
from .dedup import leader_clusters

__all__ = ["TEMPLATE_RATIO", "template_pools", "template_ratio", "word_multiset", "words"]

#: Two clusters are one template when at least this share of their words align (2·M / (a+b)).
TEMPLATE_RATIO = 0.7
_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*|" + re.escape(SLOT))


def words(text: str) -> tuple[str, ...]:
    """The lower-cased words of ``text`` with every value one :data:`~..textnorm.SLOT` token."""
    return tuple(_WORD.findall(slot_values(text).lower()))


def template_ratio(left: tuple[str, ...], right: tuple[str, ...]) -> float | None:
    """The share of aligned words (2·M / (a+b)) of two word sequences (:func:`words`) when
    they are one template — the same number of slots, every slot aligned, at least
    :data:`TEMPLATE_RATIO` of their words matched — else None."""
    slots = left.count(SLOT)
    if slots != right.count(SLOT) or not left or not right:
        return None
    if left == right:
        return 1.0
    matcher = SequenceMatcher(None, left, right, autojunk=False)
    ratio = matcher.ratio()
    if ratio < TEMPLATE_RATIO:
        return None
    aligned = sum(
        1
        for block in matcher.get_matching_blocks()
        for k in range(block.size)
        if left[block.a + k] == SLOT
    )
    return ratio if aligned == slots else None


def _one_template(left: tuple[str, ...], right: tuple[str, ...]) -> bool:
    return template_ratio(left, right) is not None


def word_multiset(tokens: tuple[str, ...]) -> frozenset[str]:
    """The words as a set, the n-th occurrence of a word its own token: set overlap is then
    the multiset overlap, which bounds the alignment from above."""
    seen: dict[str, int] = {}
    out = []
    for token in tokens:
        seen[token] = seen.get(token, 0) + 1
        out.append(f"{token}\x00{seen[token]}")
    return frozenset(out)


def template_pools(texts: Sequence[str]) -> list[int]:
    """A pool id per text (in creation order): texts that are one template share it.

    ``texts``: one question per text cluster (its representative's input, shared context
    stripped), in the clusters' order. A text without a value is never pooled: nothing in it
    is a slot a path could be read from.
    """
    tokens = [words(text) for text in texts]
    # ratio = 2M/(a+b) ≥ r needs Jaccard M/(a+b−M) ≥ r/(2−r) on the numbered word sets
    bound = TEMPLATE_RATIO / (2 - TEMPLATE_RATIO) - 1e-9
    sets = [
        word_multiset(t) if SLOT in t and len(slot_texts(text)) == t.count(SLOT) else frozenset()
        for t, text in zip(tokens, texts, strict=True)
    ]

    def verify(item: int, founder: int) -> bool:
        return _one_template(tokens[item], tokens[founder])

    return leader_clusters(sets, bound, verify=verify)
