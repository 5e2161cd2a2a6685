"""Exact Jaccard similarity at scale: prefix filtering over an inverted index.

Sets are character-bigram shingles (:func:`~.textnorm.shingles`). Two different texts are
similar when they share at least two shingles and their Jaccard index reaches the threshold
(trace2eval 0.5.1's measure); texts that fold to the same string are always similar.

Prefix filtering (Bayardo et al., "Scaling up all pairs similarity search", 2007): order
tokens rarest first; if J(x, y) ≥ t then the first ``|x| − ⌈t·|x|⌉ + 1`` tokens of x and the
first ``|y| − ⌈t·|y|⌉ + 1`` tokens of y share a token. Indexing only those prefixes and
verifying every candidate exactly finds *exactly* the pairs an all-pairs comparison finds
(:func:`similar_pairs` is tested against :func:`brute_force_pairs`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

__all__ = [
    "TokenSets",
    "brute_force_pairs",
    "jaccard",
    "leader_clusters",
    "prefix_length",
    "similar",
    "similar_pairs",
    "strip_shared_context",
]

_EPS = 1e-9
#: A line at least this long that appears in two or more distinct inputs is shared context
#: (a retrieved document, a system prompt), not part of the question.
CONTEXT_LINE_CHARS = 40


def jaccard(left: frozenset[str], right: frozenset[str]) -> float:
    if not left or not right:
        return 0.0
    shared = len(left & right)
    return shared / (len(left) + len(right) - shared)


def similar(left: frozenset[str], right: frozenset[str], threshold: float) -> bool:
    """trace2eval's rule: at least two shared shingles and Jaccard ≥ threshold."""
    if not left or not right:
        return False
    shared = len(left & right)
    return shared >= 2 and shared / (len(left) + len(right) - shared) >= threshold


def prefix_length(size: int, threshold: float) -> int:
    """Tokens to index/probe so that no pair at or above ``threshold`` is missed."""
    need = math.ceil(threshold * size - _EPS)  # rounding down the overlap only lengthens it
    return max(1, min(size, size - need + 1))


class TokenSets:
    """Shingle sets re-encoded as int tuples sorted rarest token first (ties by text)."""

    def __init__(self, sets: Sequence[frozenset[str]]) -> None:
        frequency: Counter[str] = Counter()
        for item in sets:
            frequency.update(item)
        ordered = sorted(frequency, key=lambda tok: (frequency[tok], tok))
        rank = {tok: i for i, tok in enumerate(ordered)}
        self.sets = sets
        self.encoded: list[tuple[int, ...]] = [tuple(sorted(rank[t] for t in s)) for s in sets]


def _candidates(index: dict[int, list[int]], tokens: tuple[int, ...], threshold: float) -> set[int]:
    found: set[int] = set()
    for token in tokens[: prefix_length(len(tokens), threshold)]:
        posting = index.get(token)
        if posting:
            found.update(posting)
    return found


def _add(
    index: dict[int, list[int]], tokens: tuple[int, ...], threshold: float, ident: int
) -> None:
    for token in tokens[: prefix_length(len(tokens), threshold)]:
        index.setdefault(token, []).append(ident)


def _length_ok(n: int, m: int, threshold: float) -> bool:
    return m >= threshold * n - _EPS and m * threshold <= n + _EPS


def similar_pairs(sets: Sequence[frozenset[str]], threshold: float) -> set[tuple[int, int]]:
    """Every pair (i < j) with ``similar(sets[i], sets[j])`` — the exact self-join."""
    tokens = TokenSets(sets)
    index: dict[int, list[int]] = {}
    pairs: set[tuple[int, int]] = set()
    for j, encoded in enumerate(tokens.encoded):
        if not encoded:
            continue
        for i in _candidates(index, encoded, threshold):
            if _length_ok(len(encoded), len(tokens.encoded[i]), threshold) and similar(
                sets[i], sets[j], threshold
            ):
                pairs.add((i, j))
        _add(index, encoded, threshold, j)
    return pairs


def brute_force_pairs(sets: Sequence[frozenset[str]], threshold: float) -> set[tuple[int, int]]:
    """The O(N²) reference the indexed join must agree with."""
    return {
        (i, j) for j in range(len(sets)) for i in range(j) if similar(sets[i], sets[j], threshold)
    }


def _required_overlap(n: int, m: int, threshold: float) -> int:
    """The fewest shared tokens two sets of sizes n and m need for Jaccard ≥ threshold."""
    return max(1, math.ceil(threshold / (1 + threshold) * (n + m) - _EPS))


def leader_clusters(
    sets: Sequence[frozenset[str]],
    threshold: float,
    matcher: Callable[[int, int], bool] | None = None,
    verify: Callable[[int, int], bool] | None = None,
) -> list[int]:
    """Cluster ids (in creation order) for items visited in order.

    Each item joins the *first-created* cluster whose representative (its founding item) it
    is similar to, else founds a new one. Linking to the representative rather than to any
    member is what stops single-linkage chaining from fusing unrelated questions. With a
    ``matcher(item, representative_item)`` the index is bypassed and every cluster is tried;
    a ``verify(item, representative_item)`` must also accept a similar representative (the
    Jaccard test then only bounds a stricter measure from above).

    Candidates come from the prefix index and are pruned with PPJoin's positional filter
    (Xiao et al., 2008) before the exact check, which alone decides.
    """
    assignment: list[int] = []
    representatives: list[int] = []
    if matcher is not None:
        for item in range(len(sets)):
            target = next((c for c, rep in enumerate(representatives) if matcher(item, rep)), None)
            if target is None:
                target = len(representatives)
                representatives.append(item)
            assignment.append(target)
        return assignment
    tokens = TokenSets(sets)
    index: dict[int, list[tuple[int, int, int]]] = {}
    for item, encoded in enumerate(tokens.encoded):
        target = None
        n = len(encoded)
        if n:
            overlap: dict[int, int] = {}
            for i, token in enumerate(encoded[: prefix_length(n, threshold)]):
                for cluster, j, m in index.get(token, ()):
                    seen = overlap.get(cluster, 0)
                    if seen < 0 or not _length_ok(n, m, threshold):
                        continue
                    bound = seen + 1 + min(n - i - 1, m - j - 1)
                    overlap[cluster] = (
                        seen + 1 if bound >= _required_overlap(n, m, threshold) else -1
                    )
            for cluster in sorted(c for c, count in overlap.items() if count > 0):
                founder = representatives[cluster]
                if similar(sets[item], sets[founder], threshold) and (
                    verify is None or verify(item, founder)
                ):
                    target = cluster
                    break
        if target is None:
            target = len(representatives)
            representatives.append(item)
            for j, token in enumerate(encoded[: prefix_length(n, threshold)]):
                index.setdefault(token, []).append((target, j, n))
        assignment.append(target)
    return assignment


def strip_shared_context(inputs: Iterable[str]) -> dict[str, str]:
    """Map each distinct multi-line input to its text without shared context lines.

    Only inputs that change are returned; an input made only of shared lines keeps its text.
    """
    distinct = [text for text in dict.fromkeys(inputs) if "\n" in text]
    counts: Counter[str] = Counter()
    for text in distinct:
        counts.update(
            {line.strip() for line in text.split("\n") if len(line.strip()) >= CONTEXT_LINE_CHARS}
        )
    stripped: dict[str, str] = {}
    for text in distinct:
        lines = text.split("\n")
        kept = [line for line in lines if counts.get(line.strip(), 0) < 2]
        if len(kept) != len(lines) and any(line.strip() for line in kept):
            stripped[text] = "\n".join(kept)
    return stripped
