"""Trace ids already read, in bounded memory: a scalable Bloom filter.

``suite mine traces.jsonl --store spans.db`` reads the same request twice (the export and the
store it came from); counted twice, one user's sentence would reach the privacy floor at half
its real support. Keeping every id would grow with the traffic, so :class:`SeenIds` keeps a
Bloom filter: a fixed number of bits per id (about 2.6 bytes at 1M ids), growing in stages as
ids arrive (Almeida et al., "Scalable Bloom Filters", 2007): stage ``i`` holds ``2^i × 131,072``
ids at a false-positive rate of ``1e-4 / 2^i``, so a new id is taken for one already read with
probability below ``2e-4`` however many ids come. A false positive drops a real request from the
counts: it can only make the privacy floor stricter, never looser
(``bench/bench_suite_mining.py --bloom`` measures the rate).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

import numpy as np

__all__ = ["FIRST_CAPACITY", "FIRST_RATE", "SeenIds"]

#: ids the first stage holds, and its false-positive rate (each later stage: twice the ids,
#: half the rate; the rates sum below 2 × FIRST_RATE)
FIRST_CAPACITY = 1 << 17
FIRST_RATE = 1e-4
_LN2_SQUARED = math.log(2) ** 2


class _Stage:
    def __init__(self, capacity: int, rate: float) -> None:
        self.capacity = capacity
        self.size = min(1 << 32, max(64, math.ceil(-capacity * math.log(rate) / _LN2_SQUARED)))
        self.steps = np.arange(max(1, round(self.size / capacity * math.log(2))), dtype=np.uint64)
        self.bits = np.zeros((self.size + 7) // 8, dtype=np.uint8)
        self.count = 0

    def _positions(self, h1: np.ndarray, h2: np.ndarray) -> np.ndarray:
        """Double hashing (h1 + i·h2 modulo 2^64), its top 32 bits mapped onto the bits by a
        multiply and a shift (Lemire's fast range reduction: no division)."""
        with np.errstate(over="ignore"):
            top = (h1[:, None] + self.steps[None, :] * h2[:, None]) >> np.uint64(32)
            return (top * np.uint64(self.size)) >> np.uint64(32)

    def has(self, h1: np.ndarray, h2: np.ndarray) -> np.ndarray:
        p = self._positions(h1, h2)
        masks = np.left_shift(1, (p & np.uint64(7)).astype(np.uint8), dtype=np.uint8)
        return np.all(self.bits[p >> np.uint64(3)] & masks, axis=1)

    def add(self, h1: np.ndarray, h2: np.ndarray) -> None:
        p = np.sort(self._positions(h1, h2).ravel())
        masks = np.left_shift(1, (p & np.uint64(7)).astype(np.uint8), dtype=np.uint8)
        byte, start = np.unique(p >> np.uint64(3), return_index=True)
        self.bits[byte] |= np.bitwise_or.reduceat(masks, start)
        self.count += len(h1)


class SeenIds:
    """``seen(ids)``: whether each id was (probably) read before — earlier in the same call
    included — and remembers them all."""

    def __init__(self, capacity: int = FIRST_CAPACITY, rate: float = FIRST_RATE) -> None:
        self.rate = rate
        self.stages = [_Stage(capacity, rate)]

    def seen(self, keys: Sequence[str]) -> list[bool]:
        if not keys:
            return []
        digests = b"".join(
            hashlib.blake2b(k.encode("utf-8"), digest_size=16).digest() for k in keys
        )
        pairs = np.frombuffer(digests, dtype="<u8").reshape(-1, 2)
        h1, h2 = pairs[:, 0].copy(), pairs[:, 1] | np.uint64(1)
        before = np.zeros(len(keys), dtype=bool)
        for stage in self.stages:
            before |= stage.has(h1, h2)
        _, first = np.unique(h1, return_index=True)  # the first of equal ids in this call
        new = np.zeros(len(keys), dtype=bool)
        new[first] = True
        new &= ~before
        if new.any():
            last = self.stages[-1]
            if last.count + int(new.sum()) > last.capacity:
                last = _Stage(last.capacity * 2, self.rate / (1 << len(self.stages)))
                self.stages.append(last)
            last.add(h1[new], h2[new])
        return (~new).tolist()

    @property
    def bytes(self) -> int:
        """The memory the filter's bits take."""
        return sum(stage.bits.nbytes for stage in self.stages)
