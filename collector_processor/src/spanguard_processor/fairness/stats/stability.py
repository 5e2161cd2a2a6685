"""Counterfactual stability at scale: within-seed pairwise Jaccard similarity, vectorised.

Same definition as fairtrace's (lowercased whitespace tokens; two empty responses are
identical; a seed with one record scores 1.0), computed without a Python loop over pairs:
each record's distinct tokens become integer ids, records that share a token inside a seed are
paired by offset passes over the (seed, token)-sorted entries, and ``bincount`` sums the
shared-token counts per pair. Cost is linear in the number of (record, token) entries plus the
number of within-seed pairs.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from itertools import count, repeat

import numpy as np
from numpy.typing import NDArray

from ..records import Observation

__all__ = ["stability_arrays"]


def _tokens(observations: Sequence[Observation]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    vocab: dict[str, int] = {}
    fresh = count()  # ids only need to be distinct, not dense: setdefault runs in C via map
    rows = array("q")  # raw 8-byte ints: a Python list would hold an int object per token
    ids = array("q")
    for i, o in enumerate(observations):
        distinct = set(o.response.lower().split())
        rows.extend(repeat(i, len(distinct)))
        ids.extend(map(vocab.setdefault, distinct, fresh))
    # views, not copies: each array keeps its buffer alive (a copy doubled the step's peak)
    return np.frombuffer(rows, dtype=np.int64), np.frombuffer(ids, dtype=np.int64)


def stability_arrays(
    observations: Sequence[Observation], seed_idx: NDArray[np.int64], n_seeds: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per-seed mean pairwise similarity (n_seeds,) and per-record mean similarity (n,)."""
    n = len(observations)
    order = np.argsort(seed_idx, kind="stable")  # records grouped by seed, file order inside
    local = np.empty(n, dtype=np.int64)
    sizes = np.bincount(seed_idx, minlength=n_seeds)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    local[order] = np.arange(n) - np.repeat(starts, sizes)
    pairs_per_seed = sizes * (sizes - 1) // 2
    pair_base = np.concatenate(([0], np.cumsum(pairs_per_seed)[:-1]))
    total_pairs = int(pairs_per_seed.sum())

    rows, toks = _tokens(observations)
    token_count = np.bincount(rows, minlength=n).astype(np.float64)
    inter = np.zeros(total_pairs)
    if rows.size:
        # one int64 sort key (seed, token); a stable sort keeps file order inside each run
        key = seed_idx[rows]  # built in place: each temporary is as long as the token table
        key *= int(toks.max()) + 1
        key += toks
        del toks
        sort = np.argsort(key, kind="stable")
        key = key[sort]
        r = rows[sort]
        del sort, rows
        # pair id of entries i < j of one seed at local positions a < b:
        # pair_base + a·k − a(a + 1)/2 + (b − a − 1) = first[i] + loc[j]; precomputing first
        # keeps the loop's temporaries to two int64 per matched entry
        loc = local[r]
        seed_of = seed_idx[r]
        del r
        first = pair_base[seed_of] + loc * sizes[seed_of] - loc * (loc + 1) // 2 - loc - 1
        del seed_of
        for d in range(1, int(sizes.max())):
            same = key[d:] == key[:-d]
            if not same.any():
                break
            pid = first[:-d][same]
            pid += loc[d:][same]
            inter += np.bincount(pid, minlength=total_pairs)
        del key, first, loc  # the per-entry arrays are done before the per-pair ones

    seed_sim = np.ones(n_seeds)
    record_sim = np.ones(n)
    if total_pairs == 0:
        return seed_sim, record_sim
    # enumerate every within-seed pair (i < j) in the same order as the pair ids above
    left = np.empty(total_pairs, dtype=np.int64)
    right = np.empty(total_pairs, dtype=np.int64)
    pair_seed = np.empty(total_pairs, dtype=np.int64)
    for k in np.unique(sizes[sizes >= 2]):
        members = np.flatnonzero(sizes == k)
        i, j = np.triu_indices(int(k), 1)
        base = pair_base[members][:, None] + np.arange(i.size)[None, :]
        first = starts[members][:, None]
        left[base.ravel()] = order[(first + i[None, :]).ravel()]
        right[base.ravel()] = order[(first + j[None, :]).ravel()]
        pair_seed[base.ravel()] = np.repeat(members, i.size)
    union = token_count[left]
    union += token_count[right]
    union -= inter
    with np.errstate(invalid="ignore", divide="ignore"):
        sim = np.divide(inter, union, out=np.ones_like(inter), where=union > 0)
    del union, inter
    multi = pairs_per_seed > 0
    seed_sum = np.bincount(pair_seed, weights=sim, minlength=n_seeds)
    seed_sim[multi] = seed_sum[multi] / pairs_per_seed[multi]
    rec_sum = np.bincount(left, weights=sim, minlength=n) + np.bincount(
        right, weights=sim, minlength=n
    )
    partners = sizes[seed_idx] - 1
    has = partners > 0
    record_sim[has] = rec_sum[has] / partners[has]
    return seed_sim, record_sim
