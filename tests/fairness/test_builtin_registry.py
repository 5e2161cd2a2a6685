"""One registry lists every built-in metric: the registry, the docs' table and fairtrace's own
list agree with ``BUILTIN_METRICS`` and ``FAIRTRACE_METRICS``."""

from __future__ import annotations

import re
from pathlib import Path

from fairtrace.registry import metric_registry

from spanguard_processor.fairness.metrics import (
    BUILTIN_METRICS,
    FAIRTRACE_METRICS,
    get_metric,
    metric_names,
)

_DOCS = Path(__file__).resolve().parents[2] / "docs" / "fairness.md"


def _documented() -> list[str]:
    """The metric names of docs/fairness.md's table under "## Metrics"."""
    section = _DOCS.read_text(encoding="utf-8").split("\n## Metrics\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([a-z_]+)` \|", section, re.MULTILINE)


def test_every_registered_metric_is_a_listed_built_in() -> None:
    # plugins a test registers are unregistered again, so the registry holds the built-ins
    assert sorted(BUILTIN_METRICS) == list(metric_names())
    assert len(set(BUILTIN_METRICS)) == len(BUILTIN_METRICS) == 17
    for name in BUILTIN_METRICS:
        assert get_metric(name) is not None, name


def test_the_docs_table_lists_every_built_in_once() -> None:
    assert sorted(_documented()) == sorted(BUILTIN_METRICS)


def test_the_fairtrace_metrics_are_fairtraces_own_and_built_in() -> None:
    assert set(FAIRTRACE_METRICS) == set(metric_registry.names())
    assert set(FAIRTRACE_METRICS) <= set(BUILTIN_METRICS)
