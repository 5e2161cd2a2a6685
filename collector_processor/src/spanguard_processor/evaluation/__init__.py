"""One evaluation, shared by the four gate commands: what ``fairness`` and ``run``
(:func:`.suite_run.conclude_suite_run`), ``cases run`` (:func:`.case_run.conclude_case_run`)
and ``check`` (:func:`.case_run.conclude_check`, :func:`.case_run.conclude_verdict`) do once
they hold an evaluation — the reports and the history written, the results for OTLP made,
the decision taken — returned as typed outcomes the commands print and exit on.

Imports ``common``, ``emit``, ``fairness``, ``mining`` and ``regression``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..common.lazy import lazy_exports

if TYPE_CHECKING:
    from .case_run import (
        CaseRunOutcome,
        CheckOutcome,
        VerdictOutcome,
        conclude_case_run,
        conclude_check,
        conclude_verdict,
    )
    from .suite_run import MinedReplay, SuiteRunOutcome, conclude_suite_run

__all__ = [
    "CaseRunOutcome",
    "CheckOutcome",
    "MinedReplay",
    "SuiteRunOutcome",
    "VerdictOutcome",
    "conclude_case_run",
    "conclude_check",
    "conclude_suite_run",
    "conclude_verdict",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "CaseRunOutcome": ".case_run",
        "CheckOutcome": ".case_run",
        "MinedReplay": ".suite_run",
        "SuiteRunOutcome": ".suite_run",
        "VerdictOutcome": ".case_run",
        "conclude_case_run": ".case_run",
        "conclude_check": ".case_run",
        "conclude_suite_run": ".suite_run",
        "conclude_verdict": ".case_run",
    },
)
