"""The metric kinds as strategies, and the closed vocabularies as string enums."""

from __future__ import annotations

import json

import pytest

from spanguard_processor.fairness.gate.config import GateConfig, GateMode
from spanguard_processor.fairness.gate.results import Verdict
from spanguard_processor.fairness.kinds import STRATEGIES, strategy
from spanguard_processor.fairness.kinds.gap import GapStrategy
from spanguard_processor.fairness.metrics import get_metric, metric_names
from spanguard_processor.fairness.vocabulary import Category, Direction, Kind, Scale


def test_every_metric_kind_has_its_own_strategy() -> None:
    assert set(STRATEGIES) == set(Kind)
    assert len({id(s) for s in STRATEGIES.values()}) == len(Kind)
    used = {
        definition.kind for name in metric_names() if (definition := get_metric(name)) is not None
    }
    assert used == set(Kind)  # the built-ins use every kind


def test_a_kind_given_as_its_string_finds_the_same_strategy() -> None:
    assert strategy("stability") is STRATEGIES[Kind.STABILITY]  # type: ignore[arg-type]
    assert isinstance(strategy("gap"), GapStrategy)  # type: ignore[arg-type]


@pytest.mark.parametrize("vocabulary", [Kind, Direction, Scale, Category, GateMode, Verdict])
def test_vocabularies_read_and_serialise_as_their_strings(vocabulary: type) -> None:
    for member in vocabulary:
        assert json.dumps({"v": member}) == json.dumps({"v": member.value})
        assert f"{member}" == str(member) == member.value
        assert vocabulary(member.value) is member


def test_a_gate_mode_given_as_a_string_becomes_the_enum() -> None:
    assert GateConfig(mode="upper-bound").mode is GateMode.UPPER_BOUND  # type: ignore[arg-type]


def test_only_the_gap_kind_has_a_design_mde() -> None:
    """`suite plan` asks the kind's strategy, not the kind's name, whether a design MDE exists."""
    assert {kind: s.gap_between_groups for kind, s in STRATEGIES.items()} == {
        Kind.GAP: True,
        Kind.STABILITY: False,
        Kind.LEGACY_EXPOSURE: False,
    }
