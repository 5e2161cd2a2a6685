"""The fast loop's guard: a report of the tests that took longer than the budget without a
``slow`` mark.

``pytest -m "not slow"`` is the loop a developer runs between edits; it stays fast only if every
test over a few seconds carries ``@pytest.mark.slow``. This plugin (loaded by tests/conftest.py)
adds up each test's setup, call and teardown time and, at the end of the run, lists every
unmarked test over the budget with its time — in the terminal summary, so CI output shows it.
It reports and does not fail: a test's time on a busy shared machine varies too much for a hard
limit, and a flaky guard would be worse than none. The budget is the ``slow_budget`` ini option
(seconds); a session-scoped fixture's setup counts for the first test that asks for it.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

DEFAULT_BUDGET_S = 3.0


def over_budget(times: dict[str, float], unmarked: set[str], budget: float) -> list[str]:
    """The unmarked tests over ``budget`` seconds, slowest first, each as ``'12.3s nodeid'``."""
    slow = sorted((-t, node) for node, t in times.items() if node in unmarked and t > budget)
    return [f"{-t:.1f}s {node}" for t, node in slow]


class SlowBudget:
    def __init__(self, budget: float) -> None:
        self.budget = budget
        self.times: dict[str, float] = defaultdict(float)
        self.unmarked: set[str] = set()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.times[report.nodeid] += report.duration
        if "slow" not in report.keywords:
            self.unmarked.add(report.nodeid)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        lines = over_budget(self.times, self.unmarked, self.budget)
        if lines:
            tests = "test" if len(lines) == 1 else "tests"
            terminalreporter.section(
                f"{len(lines)} {tests} over {self.budget:g}s without a slow mark"
            )
            for line in lines:
                terminalreporter.write_line(line)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "slow_budget",
        "seconds a test may take without a slow mark before the summary names it",
        default=str(DEFAULT_BUDGET_S),
    )


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(SlowBudget(float(config.getini("slow_budget"))), "slow_budget")
