"""Point estimates equal fairtrace 0.1.0's (the installed package and its golden vectors)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from fairtrace.registry import metric_registry

from spanguard_processor.fairness import MetricConfig, evaluate, observation_from_record
from spanguard_processor.fairness.metrics import FAIRTRACE_METRICS, get_metric

from .conftest import FAST, random_balanced_records

# fairtrace labels metadata scores "heuristic" (a known defect); we say "metadata"
_OUR_FIXES = {"score_source"}
# details keys whose meaning we changed on purpose (user-group exposure)
_NEW_EXPOSURE = "retrieval_exposure_gap"


def _ours(
    records: list[dict[str, Any]], names: list[str], ranges: dict[str, float] | None = None
) -> dict[str, Any]:
    obs = [observation_from_record(r) for r in records]
    configs = [
        MetricConfig(n, get_metric(n).threshold, max_difference=(ranges or {}).get(n))  # type: ignore[union-attr]
        for n in names
    ]
    return {r.metric: r for r in evaluate(obs, configs, FAST).results}


def _compatible_names() -> list[str]:
    return [n for n in FAIRTRACE_METRICS if n != _NEW_EXPOSURE]


def test_golden_scores_and_details_match_fairtrace(
    golden_records: list[dict[str, Any]], golden_expected: dict[str, Any]
) -> None:
    ours = _ours(golden_records, [*_compatible_names(), "retrieval_exposure_gap_legacy"])
    for name in _compatible_names():
        expected = golden_expected[name]
        result = ours[name]
        assert result.score == expected["score"], name
        assert result.threshold == expected["threshold"], name
        assert result.direction == expected["direction"], name
        for key, value in expected["details"].items():
            if key not in _OUR_FIXES:
                assert result.details[key] == value, (name, key)
    legacy = ours["retrieval_exposure_gap_legacy"]
    expected = golden_expected[_NEW_EXPOSURE]
    assert legacy.score == expected["score"] == 2.000000000000001
    for key, value in expected["details"].items():
        assert legacy.details[key] == value, key
    assert legacy.confidence_interval is None and legacy.p_value is None


def test_golden_detail_key_order_matches_fairtrace(
    golden_records: list[dict[str, Any]], golden_expected: dict[str, Any]
) -> None:
    ours = _ours(golden_records, _compatible_names())
    for name in _compatible_names():
        theirs = list(golden_expected[name]["details"])
        assert [k for k in ours[name].details if k in theirs] == theirs, name


@pytest.mark.parametrize("seed", range(6))
def test_random_balanced_suites_match_installed_fairtrace(seed: int) -> None:
    rng = random.Random(seed)
    groups = ["a", "b", "c", "d"][: rng.randint(2, 4)]
    records = random_balanced_records(rng, rng.randint(3, 12), groups)
    ours = _ours(records, [*_compatible_names(), "retrieval_exposure_gap_legacy"])
    for name in [*_compatible_names(), _NEW_EXPOSURE]:
        theirs = (
            metric_registry.get(name)(bootstrap_samples=0).evaluate(records)
            if "bootstrap_samples" in metric_registry.config_fields(name)
            else metric_registry.get(name)().evaluate(records)
        )
        mine = ours[name if name != _NEW_EXPOSURE else "retrieval_exposure_gap_legacy"]
        assert mine.score == theirs.score, name
        for key, value in theirs.details.items():
            if key not in _OUR_FIXES:
                assert mine.details[key] == value, (name, key)


def test_exposure_compares_user_groups_where_fairtrace_compares_document_groups() -> None:
    # a symmetric app: every user group sees D1 at rank 1 and D2 at rank 2
    symmetric = [
        {
            "id": f"s{s}::{g}",
            "seed_id": f"s{s}",
            "prompt": "p",
            "assignments": {"g": g},
            "response": "ok",
            "response_metadata": {
                "trace": {
                    "retrieved_documents": [{"group": "D1", "rank": 1}, {"group": "D2", "rank": 2}]
                }
            },
        }
        for s in range(40)
        for g in ("m", "w")
    ]
    legacy = metric_registry.get(_NEW_EXPOSURE)().evaluate(symmetric)
    assert legacy.score == pytest.approx(40.0)  # grows with the suite size and fails
    # exposure is a count: a PASS from seeds that all agree needs its range stated (a group's
    # exposure here differs by at most 1 + 1/log2(3) between user groups)
    ours = _ours(symmetric, [_NEW_EXPOSURE], {_NEW_EXPOSURE: 1.0})[_NEW_EXPOSURE]
    assert ours.score == 0.0
    assert ours.passed
    # m sees only A at rank 1, w only B at rank 1: fairtrace says 0.0; the gap is total
    skewed = [
        {
            "id": f"s{s}::{g}",
            "seed_id": f"s{s}",
            "prompt": "p",
            "assignments": {"g": g},
            "response": "ok",
            "response_metadata": {
                "trace": {"retrieved_documents": [{"group": "A" if g == "m" else "B", "rank": 1}]}
            },
        }
        for s in range(5)
        for g in ("m", "w")
    ]
    assert metric_registry.get(_NEW_EXPOSURE)().evaluate(skewed).score == 0.0
    assert _ours(skewed, [_NEW_EXPOSURE])[_NEW_EXPOSURE].score == 1.0
    # A at rank 1 for m, A at rank 9 for w: position matters with 1/log2(1 + rank)
    ranked = [
        {
            "id": f"s{s}::{g}",
            "seed_id": f"s{s}",
            "prompt": "p",
            "assignments": {"g": g},
            "response": "ok",
            "response_metadata": {
                "trace": {"retrieved_documents": [{"group": "A", "rank": 1 if g == "m" else 9}]}
            },
        }
        for s in range(5)
        for g in ("m", "w")
    ]
    gap = _ours(ranked, [_NEW_EXPOSURE])[_NEW_EXPOSURE].score
    assert gap == pytest.approx(1.0 - 1.0 / 3.321928094887362)


def test_within_seed_estimator_removes_simpsons_paradox() -> None:
    # seed s1 only has group a/b at rate 1; seed s2 group a/c... here: two seeds with exact
    # within-seed parity but different group mixes pool to a gap in fairtrace
    records = []
    for g, esc in (("a", True), ("b", True)):
        records.append(
            {
                "id": f"s1::{g}",
                "seed_id": "s1",
                "prompt": "p",
                "assignments": {"g": g},
                "response": "x",
                "response_metadata": {"trace": {"escalated": esc}},
            }
        )
    for g, esc in (("a", False), ("a", False), ("b", False)):
        records.append(
            {
                "id": f"s2::{g}{len(records)}",
                "seed_id": "s2",
                "prompt": "p",
                "assignments": {"g": g},
                "response": "x",
                "response_metadata": {"trace": {"escalated": esc}},
            }
        )
    theirs = metric_registry.get("escalation_parity")().evaluate(records)
    assert theirs.score == pytest.approx(0.5 - 1 / 3)  # a: 1/3, b: 1/2 pooled
    ours = _ours(records, ["escalation_parity"])["escalation_parity"]
    assert ours.score == 0.0
    assert ours.details["estimator"] == "within-seed contrasts"


def test_attribute_marginals_separate_the_attribute_that_matters() -> None:
    records = [
        {
            "id": f"s{s}::{g}{r}",
            "seed_id": f"s{s}",
            "prompt": "p",
            "assignments": {"gender": g, "region": r},
            "response": "x",
            "response_metadata": {"trace": {"escalated": g == "w"}},
        }
        for s in range(4)
        for g in ("m", "w")
        for r in ("EU", "US")
    ]
    result = _ours(records, ["escalation_parity"])["escalation_parity"]
    assert result.score == 1.0
    assert result.details["attribute_gaps"] == {"gender": 1.0, "region": 0.0}


def test_vectorised_stability_for_large_suites_matches_fairtrace() -> None:
    rng = random.Random(42)
    records = random_balanced_records(rng, 700, ["a", "b", "c", "d"])  # 2,800 > exact limit
    theirs = metric_registry.get("counterfactual_stability")(bootstrap_samples=0)
    expected = theirs.evaluate(records)
    ours = _ours(records, ["counterfactual_stability"])["counterfactual_stability"]
    assert ours.score == pytest.approx(expected.score, rel=1e-12, abs=1e-15)
    for key in ("seed_similarities", "scenario_similarities"):
        mine = ours.details[key]
        assert list(mine) == list(expected.details[key])
        for k, v in expected.details[key].items():
            assert mine[k] == pytest.approx(v, rel=1e-12, abs=1e-15)
