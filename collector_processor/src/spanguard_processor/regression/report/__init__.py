"""Stage 4, reporting: a run or a gate verdict rendered (console, Markdown, JUnit, HTML).

:mod:`.render` (console, Markdown, JUnit), :mod:`.report_html` (the HTML check report) and
:mod:`.diff_report` (the per-case diffs) for trace2eval's rules; :mod:`.verdict_report` for the
four-outcome verdict from repeats. Nothing here decides; everything here renders.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...common.lazy import lazy_exports

if TYPE_CHECKING:
    from .render import render_check
    from .report_html import render_check_html
    from .verdict_report import render_verdict

__all__ = [
    "render_check",
    "render_check_html",
    "render_verdict",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "render_check": ".render",
        "render_check_html": ".report_html",
        "render_verdict": ".verdict_report",
    },
)
