"""What an evaluation becomes: report.json, Markdown and JUnit (:mod:`.reports`), HTML
(:mod:`.report_html`, evidence cards in :mod:`.evidence_report`), the wording of every verdict
(:mod:`.verdict_text`), redaction (:mod:`.redaction`), two reports compared (:mod:`.compare`)
and the run history (:mod:`.history`). The details and counterfactual pairs a result holds are
found by its kind (:mod:`..kinds.details`, :mod:`..kinds.evidence`), before any report."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...common.lazy import lazy_exports

if TYPE_CHECKING:
    from .compare import compare_reports
    from .reports import write_reports

__all__ = [
    "compare_reports",
    "write_reports",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "compare_reports": ".compare",
        "write_reports": ".reports",
    },
)
