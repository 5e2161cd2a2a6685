"""The sufficient-statistics table (fairness/stats/sufficient.py) carries what the gate reads:
the seed-adjusted gap rebuilt from its cells equals the one computed from the records."""

from __future__ import annotations

import numpy as np

from spanguard_processor.fairness.stats import seeds
from spanguard_processor.fairness.stats.sufficient import (
    TABLE_VERSION,
    cell_arrays,
    reduce_values,
)


def _records(rng: np.random.Generator, n_seeds: int = 40) -> tuple[list[str], ...]:
    seed_ids, groups, variants = [], [], []
    for s in range(n_seeds):
        for g in ("gender=f", "gender=m", "gender=x"):
            if s % 7 == 3 and g == "gender=x":
                continue  # unbalanced: some seeds lack a group
            for _repeat in range(1 + (s % 3 == 0)):
                seed_ids.append(f"s{s:03d}")
                groups.append(g)
                variants.append(f"s{s:03d}-{g}")
    return seed_ids, groups, variants


def _centred_from_cells(counts: np.ndarray, sums: np.ndarray) -> np.ndarray:
    """seed_aggregates' centred sums, from raw per-cell sums and counts."""
    per_seed = counts.sum(axis=1)
    seed_mean = sums.sum(axis=1) / np.maximum(per_seed, 1.0)[:, None]
    centred = sums - counts[:, :, None] * seed_mean[:, None, :]
    contrast = (counts > 0).sum(axis=1) >= 2
    out: np.ndarray = np.where(contrast[:, None, None], centred, 0.0)
    return out


def test_gap_from_cells_equals_gap_from_records() -> None:
    rng = np.random.default_rng(7)
    seed_ids, groups, variants = _records(rng)
    n = len(seed_ids)
    values = rng.normal(size=(n, 2)) + np.array([0.0, 1.0])
    values[np.array(groups) == "gender=m", 0] += 0.4
    valid = rng.random(n) > 0.1
    table = reduce_values("m", seed_ids, groups, variants, values, valid)
    seed_labels = sorted(set(seed_ids))
    group_labels = sorted(set(groups))
    counts, sums, squares = cell_arrays(table.cells, seed_labels, group_labels)

    s_idx = np.array([seed_labels.index(s) for s in seed_ids])
    g_idx = np.array([group_labels.index(g) for g in groups])
    design = seeds.build_design(s_idx[valid], g_idx[valid], len(seed_labels), len(group_labels))
    expected_sums, expected_counts = seeds.seed_aggregates(design, values[valid])
    contrast = (counts > 0).sum(axis=1) >= 2
    np.testing.assert_allclose(_centred_from_cells(counts, sums), expected_sums, atol=1e-12)
    np.testing.assert_array_equal(np.where(contrast[:, None], counts, 0.0), expected_counts)
    from_cells = seeds.gap_estimate(_centred_from_cells(counts, sums), counts * contrast[:, None])
    from_records = seeds.gap_estimate(expected_sums, expected_counts)
    assert abs(from_cells.gap - from_records.gap) < 1e-12
    assert from_cells.gap > 0.2  # the planted gap is seen
    kept = values[valid]
    assert np.isclose(squares.sum(), float((kept**2).sum()))
    assert table.version == TABLE_VERSION


def test_rows_are_sorted_and_count_variants_and_discordance() -> None:
    seed_ids = ["b", "a", "a", "a", "b"]
    groups = ["g=1", "g=2", "g=1", "g=1", "g=2"]
    variants = ["b1", "a2", "a1", "a1", "b2"]
    values = np.array([[1.0], [0.0], [1.0], [1.0], [1.0]])
    table = reduce_values("rate", seed_ids, groups, variants, values, np.ones(5, dtype=bool))
    keys = [(c.seed_id, c.group, c.count, c.total, c.variants) for c in table.cells]
    assert keys == [
        ("a", "g=1", 2, 2.0, 1),
        ("a", "g=2", 1, 0.0, 1),
        ("b", "g=1", 1, 1.0, 1),
        ("b", "g=2", 1, 1.0, 1),
    ]
    assert [(d.seed_id, d.groups, d.discordant) for d in table.discordance] == [
        ("a", 2, True),
        ("b", 2, False),
    ]
