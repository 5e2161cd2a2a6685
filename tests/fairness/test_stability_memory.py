"""Counterfactual stability's memory at scale (the 1M-record benchmark peaks in this step)."""

from __future__ import annotations

import random
import tracemalloc

import numpy as np

from spanguard_processor.fairness import observation_from_record
from spanguard_processor.fairness.stats.stability import stability_arrays

_WORDS = [
    "sure",
    "here",
    "are",
    "the",
    "steps",
    "to",
    "reset",
    "your",
    "password",
    "open",
    "settings",
    "then",
    "security",
    "choose",
    "and",
    "confirm",
    "by",
    "email",
]


def test_stability_peak_memory_per_token_entry() -> None:
    # the benchmark's shape: 10 variants per seed, a few shared words and one unique token each;
    # numpy reports its buffers to tracemalloc, so the peak covers the token, sort and pair
    # arrays. It was 75 bytes per (record, token) entry (copies of the token table, and the
    # per-entry sort arrays alive beside the pair loop's temporaries); now 47.
    rng = random.Random(1)
    seeds, per = 600, 10
    obs = [
        observation_from_record(
            {
                "id": f"s{s}::{k}",
                "seed_id": f"s{s}",
                "prompt": "p",
                "assignments": {"g": "ab"[k % 2]},
                "response": " ".join(rng.sample(_WORDS, rng.randint(3, 12))) + f" #{s}.{k}",
            },
            0,
        )
        for s in range(seeds)
        for k in range(per)
    ]
    entries = sum(len(set(o.response.lower().split())) for o in obs)
    seed_idx = np.repeat(np.arange(seeds, dtype=np.int64), per)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        seed_sim, record_sim = stability_arrays(obs, seed_idx, seeds)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert seed_sim.shape == (seeds,) and record_sim.shape == (seeds * per,)
    assert float(seed_sim.min()) > 0.0 and float(seed_sim.max()) < 1.0
    assert peak / entries < 60.0, peak / entries
