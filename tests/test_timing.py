"""The slow-mark report (tests/timing.py) names an unmarked test over the budget, and only it."""

from __future__ import annotations

import pytest

from tests.timing import over_budget

_TESTS = """
import time

import pytest


def test_unmarked_and_slow():
    time.sleep(0.3)


@pytest.mark.slow
def test_marked_and_slow():
    time.sleep(0.3)
"""


def test_the_summary_names_the_unmarked_test_over_the_budget(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # the inner run needs none of them
    pytester.makeini("[pytest]\nslow_budget = 0.2\nmarkers =\n    slow: slow\n")
    pytester.makepyfile(test_sample=_TESTS)
    result = pytester.runpytest_inprocess("-p", "tests.timing")
    result.assert_outcomes(passed=2)
    result.stdout.re_match_lines([r".*1 test over 0.2s without a slow mark.*", r"\d+\.\ds .*"])
    named = [line for line in result.outlines if line.endswith("_slow")]
    assert named and all(line.endswith("test_sample.py::test_unmarked_and_slow") for line in named)


def test_nothing_is_reported_when_every_slow_test_is_marked(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makeini("[pytest]\nslow_budget = 5\n")
    pytester.makepyfile(test_sample="def test_quick():\n    pass\n")
    result = pytester.runpytest_inprocess("-p", "tests.timing")
    result.assert_outcomes(passed=1)
    assert not any("without a slow mark" in line for line in result.outlines)


def test_over_budget_sorts_slowest_first_and_skips_marked_and_quick_tests() -> None:
    times = {"a": 5.0, "b": 12.25, "c": 1.0, "d": 30.0}
    assert over_budget(times, unmarked={"a", "b", "c"}, budget=3.0) == ["12.2s b", "5.0s a"]
