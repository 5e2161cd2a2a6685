"""Trace ids already read, in bounded memory: a scalable, blocked Bloom filter.

``suite mine traces.jsonl --store spans.db`` reads the same request twice (the export and the
store it came from); counted twice, one user's sentence would reach the privacy floor at half
its real support. Keeping every id would grow with the traffic by ~100 bytes an id, so
:class:`SeenIds` keeps a Bloom filter instead: about 8 bytes per id (7.9 MB at 1M), in stages
that are added as ids arrive (Almeida et al., "Scalable Bloom Filters", 2007): stage ``i`` holds
``2^i × 131,072`` ids at a false-positive rate of ``2.5e-5 / 2^i``, so a new id is taken for
one already read with probability below ``5e-5`` however many ids come. Each id's bits lie in one
64-byte block (one cache line; Putze et al., 2007), sized for the block's varying load. Ids are
checked a batch at a time with numpy. A false positive drops a real request from the counts:
it can only make the privacy floor stricter, never looser (``bench/bench_suite_mining.py
--bloom`` measures the rate).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["FIRST_CAPACITY", "FIRST_RATE", "SeenIds"]

#: ids the first stage holds, and its false-positive rate (each later stage: twice the ids,
#: half the rate; the rates sum below 2 × FIRST_RATE = 5e-5)
FIRST_CAPACITY = 1 << 17
FIRST_RATE = 2.5e-5
_LN2_SQUARED = math.log(2) ** 2
_BLOCK = 64  # bytes: one cache line holds every bit of one id
_SEEDS = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xD1B54A32D192ED03))


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: every input bit moves every output bit."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _hashes(keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Two 64-bit hashes of each key, vectorised over its UTF-8 bytes (zero-padded to whole
    8-byte words, its length mixed in so that padding never makes two keys equal)."""
    encoded = [k.encode("utf-8") for k in keys]
    raw = np.array(encoded)
    width = max(8, -(-raw.dtype.itemsize // 8) * 8)
    words = raw.astype(f"S{width}").view("<u8").reshape(len(keys), -1)
    lengths = np.fromiter((len(b) for b in encoded), dtype=np.uint64, count=len(keys))
    used = -(-lengths.astype(np.int64) // 8)  # a key's own words: the batch's padding is not
    out = []
    with np.errstate(over="ignore"):
        for seed in _SEEDS:
            h = _mix(lengths ^ seed)
            for j, column in enumerate(words.T):
                h = np.where(j < used, _mix(h ^ column) + seed, h)
            out.append(h)
    return out[0], out[1] | np.uint64(1)


def _blocked_rate(bits_per_id: float, k: int) -> float:
    """A blocked filter's false-positive rate: a block's load is Poisson, and a loaded block
    answers more falsely than the mean load (Putze et al., 2007, eq. 3)."""
    bits = 8 * _BLOCK
    mean = bits / bits_per_id
    total, term = 0.0, math.exp(-mean)
    for load in range(int(mean * 4) + 20):
        if load:
            term *= mean / load
        total += term * (1 - (1 - 1 / bits) ** (k * load)) ** k
    return total


def _design(rate: float) -> tuple[float, int]:
    """The fewest bits per id (in steps of 1/2), and the bits set per id, reaching ``rate``."""
    bits_per_id = -math.log(rate) / _LN2_SQUARED  # the classic filter's, a lower bound
    while True:
        for k in range(4, 32):
            if _blocked_rate(bits_per_id, k) <= rate:
                return bits_per_id, k
        bits_per_id += 0.5


class _Stage:
    """A blocked Bloom filter (Putze et al., 2007): an id's bits all lie in one 64-byte block."""

    def __init__(self, capacity: int, rate: float) -> None:
        self.capacity = capacity
        bits_per_id, k = _design(rate)
        self.blocks = max(1, math.ceil(capacity * bits_per_id / (8 * _BLOCK)))
        self.steps = np.arange(k, dtype=np.uint64)
        self.bits = np.zeros(self.blocks * _BLOCK, dtype=np.uint8)
        self.count = 0

    def _positions(self, h1: np.ndarray, h2: np.ndarray) -> np.ndarray:
        """The bit positions: a block from h1's top bits (multiply-shift, no division), then
        k bits in it, each the top 9 bits of h2 mixed with the bit's number."""
        with np.errstate(over="ignore"):
            block = ((h1 >> np.uint64(32)) * np.uint64(self.blocks)) >> np.uint64(32)
            # each bit from its own mix (double hashing's progressions overlap in a block)
            inner = _mix(h2[:, None] + self.steps[None, :] * _SEEDS[0]) >> np.uint64(55)
            return block[:, None] * np.uint64(8 * _BLOCK) + inner

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

    def contains(self, keys: Sequence[str]) -> list[bool]:
        """Whether each id was (probably) read before, remembering none of them."""
        return self._before(*_hashes(keys)).tolist() if keys else []

    def _before(self, h1: np.ndarray, h2: np.ndarray) -> np.ndarray:
        before = np.zeros(len(h1), dtype=bool)
        for stage in self.stages:
            before |= stage.has(h1, h2)
        return before

    def seen(self, keys: Sequence[str]) -> list[bool]:
        if not keys:
            return []
        h1, h2 = _hashes(keys)
        before = self._before(h1, h2)
        order = np.lexsort((h2, h1))  # the first of equal ids in this call
        same = (h1[order][1:] == h1[order][:-1]) & (h2[order][1:] == h2[order][:-1])
        new = np.ones(len(keys), dtype=bool)
        new[order[1:][same]] = False
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
