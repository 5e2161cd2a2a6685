"""Leader clustering with exact Jaccard through sparse matrix products (scipy).

The same result as :func:`.dedup.leader_clusters` (tested against a brute-force pass), built
for logs whose vocabulary is small and repetitive, where every posting list of a prefix index
is long. Items are processed in chunks: one sparse product gives each chunk's overlaps with
every existing representative, a second its overlaps within the chunk; the Jaccard test is
vectorised over the non-zeros, and only the sequential founding decisions run in Python.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

__all__ = ["leader_clusters_sparse"]

#: Bound on the overlap entries one chunk may produce (≈ chunk × representatives), which
#: bounds the memory of one product.
_WORK = 8_000_000


def _matrix(sets: Sequence[frozenset[str]]) -> tuple[sp.csr_matrix, np.ndarray]:
    vocab: dict[str, int] = {}
    indptr = [0]
    indices: list[int] = []
    for item in sets:
        indices.extend(vocab.setdefault(tok, len(vocab)) for tok in sorted(item))
        indptr.append(len(indices))
    data = np.ones(len(indices), dtype=np.int32)
    shape = (len(sets), max(1, len(vocab)))
    matrix = sp.csr_matrix((data, np.array(indices, dtype=np.int64), np.array(indptr)), shape=shape)
    sizes = np.diff(matrix.indptr).astype(np.int64)
    return matrix, sizes


def _similar_entries(
    product: sp.csr_matrix, left: np.ndarray, right: np.ndarray, threshold: float
) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) of the non-zeros passing trace2eval's test: ≥ 2 shared and Jaccard ≥ t."""
    coo = product.tocoo()
    shared = coo.data.astype(np.int64)
    union = left[coo.row] + right[coo.col] - shared
    keep = (shared >= 2) & (shared / union >= threshold)
    return coo.row[keep], coo.col[keep]


def leader_clusters_sparse(sets: Sequence[frozenset[str]], threshold: float) -> list[int]:
    """Cluster ids in creation order; an item joins the first cluster whose founder it matches."""
    total = len(sets)
    if total == 0:
        return []
    matrix, sizes = _matrix(sets)
    assignment = np.full(total, -1, dtype=np.int64)
    founders: list[int] = []
    start = 0
    while start < total:
        chunk = max(64, min(2048, _WORK // max(1, len(founders))))
        stop = min(total, start + chunk)
        block = matrix[start:stop]
        block_sizes = sizes[start:stop]
        best = np.full(stop - start, np.iinfo(np.int64).max, dtype=np.int64)
        if founders:
            reps = np.array(founders, dtype=np.int64)
            rows, cols = _similar_entries(
                block @ matrix[reps].T, block_sizes, sizes[reps], threshold
            )
            np.minimum.at(best, rows, cols)
        rows, cols = _similar_entries(block @ block.T, block_sizes, block_sizes, threshold)
        earlier = cols < rows
        inner: dict[int, list[int]] = {}
        for row, col in zip(rows[earlier].tolist(), cols[earlier].tolist(), strict=True):
            inner.setdefault(row, []).append(col)
        local_cluster: dict[int, int] = {}
        for offset in range(stop - start):
            if best[offset] != np.iinfo(np.int64).max:
                assignment[start + offset] = best[offset]
                continue
            matches = [local_cluster[j] for j in inner.get(offset, ()) if j in local_cluster]
            if matches:
                assignment[start + offset] = min(matches)
            else:
                local_cluster[offset] = len(founders)
                assignment[start + offset] = len(founders)
                founders.append(start + offset)
        start = stop
    result: list[int] = assignment.tolist()
    return result
