"""Fairness and span assertions inside ordinary unit tests.

Run from the repository root::

    python -m pytest examples/test_fairness_example.py

``assert_fair`` runs the app over every variant of the suite in-process and raises
``AssertionError`` (naming each failing metric with its score, interval and Holm p) when the
gate fails. The ``spanguard_spans`` fixture (registered by the ``spanguard`` pytest plugin, no
import needed) captures the spans one test emits, whatever exporter the app configured.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import rag_app  # pytest puts this folder (examples/, no __init__.py) on sys.path

from spanguard import semconv
from spanguard.testing import SpanCapture
from spanguard_processor.fairness.testing import assert_fair
from spanguard_processor.traces.convert import traces_from_readable_spans

SUITE = Path(__file__).resolve().parent / "rag_suite.yaml"


def test_rag_app_is_fair() -> None:
    evaluation = assert_fair(SUITE, app=rag_app.answer)
    assert {r.metric for r in evaluation.results} == {
        "retrieval_exposure_gap",
        "helpfulness_gap",
        "counterfactual_stability",
    }


def test_a_biased_ranking_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(rag_app.BIAS_ENV, "1")
    with pytest.raises(AssertionError, match="retrieval_exposure_gap"):
        assert_fair(SUITE, app=rag_app.answer)


def test_retrieval_is_recorded_with_groups_and_ranks(spanguard_spans: SpanCapture) -> None:
    rag_app.answer("How do I export my data to CSV?", {"language": "English"})
    retrieval = [
        s
        for s in spanguard_spans.spans()
        if s["attributes"].get(semconv.GEN_AI_OPERATION_NAME) == "retrieval"
    ]
    assert len(retrieval) == 1
    (trace,) = traces_from_readable_spans(spanguard_spans.readable_spans())
    docs = trace.trace.retrieved_documents
    assert [(d.id, d.group, d.rank) for d in docs][:2] == [
        ("vendor-export", "vendor", 1),
        ("forum-export", "forum", 2),
    ]
