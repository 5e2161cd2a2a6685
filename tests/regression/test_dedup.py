"""The indexed Jaccard join and the clustering agree exactly with brute force."""

from __future__ import annotations

import random

import pytest

from spanguard_processor.regression.mine.dedup import (
    brute_force_pairs,
    leader_clusters,
    similar,
    similar_pairs,
    strip_shared_context,
)
from spanguard_processor.regression.mine.sparse_dedup import leader_clusters_sparse
from spanguard_processor.regression.textnorm import fold, shingles


def _paraphrased(seed: int, bases: int) -> list[frozenset[str]]:
    rng = random.Random(seed)
    alphabet = "abcdefgh退款政策手机"
    texts: list[str] = []
    for _ in range(bases):
        base = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))
        texts.append(base)
        for _ in range(rng.randint(0, 4)):  # paraphrases: substitutions, insertions, cuts
            chars = list(base)
            for _ in range(rng.randint(0, 4)):
                op = rng.random()
                if op < 0.5 and chars:
                    chars[rng.randrange(len(chars))] = rng.choice(alphabet)
                elif op < 0.8:
                    chars.insert(rng.randrange(len(chars) + 1), rng.choice(alphabet))
                elif chars:
                    del chars[rng.randrange(len(chars))]
            texts.append("".join(chars))
    rng.shuffle(texts)
    return [shingles(fold(t)) for t in texts]


@pytest.mark.parametrize("threshold", [0.4, 0.6, 0.75, 1.0])
@pytest.mark.parametrize("seed", [1, 2])
def test_indexed_join_finds_exactly_the_all_pairs_result(seed: int, threshold: float) -> None:
    sets = _paraphrased(seed, 250)
    expected = brute_force_pairs(sets, threshold)
    assert similar_pairs(sets, threshold) == expected
    if threshold == 0.6:
        assert len(expected) > 100  # the data really holds near-duplicates


@pytest.mark.parametrize("threshold", [0.5, 0.6, 0.8])
def test_leader_clustering_matches_a_brute_force_leader_pass(threshold: float) -> None:
    sets = _paraphrased(5, 300)
    reps: list[int] = []
    expected: list[int] = []
    for i, s in enumerate(sets):
        target = next((c for c, r in enumerate(reps) if similar(s, sets[r], threshold)), None)
        if target is None:
            target = len(reps)
            reps.append(i)
        expected.append(target)
    assert leader_clusters(sets, threshold) == expected
    assert leader_clusters_sparse(sets, threshold) == expected


def test_similarity_reproduces_the_spec_worked_values() -> None:
    def jac(a: str, b: str) -> bool:
        return similar(shingles(fold(a)), shingles(fold(b)), 0.6)

    assert jac("你们的退款政策是什么？", "退款政策是什么")  # 0.667
    assert jac("reset password", "password reset")  # 0.846
    assert not jac("退款政策", "你们的退款政策是什么？")  # 0.333


def test_no_chaining_through_an_intermediate_phrasing() -> None:
    a, b, c = "abcdefgh", "abcdefxy", "abcdwzxy"
    sets = [shingles(t) for t in (a, b, c)]
    assert similar(sets[0], sets[1], 0.4) and similar(sets[1], sets[2], 0.4)
    assert not similar(sets[0], sets[2], 0.4)
    assert leader_clusters(sets, 0.4) == [0, 0, 1]


def test_shared_context_lines_are_left_out_of_the_comparison() -> None:
    doc = "Refunds are processed within fourteen days of the request being approved."
    inputs = [
        f"Context:\n{doc}\nQuestion: how do I reset my password",
        f"Context:\n{doc}\nQuestion: which plans include invoices",
    ]
    stripped = strip_shared_context(inputs)
    assert stripped[inputs[0]] == "Context:\nQuestion: how do I reset my password"
    assert not similar(
        shingles(fold(stripped[inputs[0]])), shingles(fold(stripped[inputs[1]])), 0.6
    )
