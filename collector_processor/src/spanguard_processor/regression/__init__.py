"""Regression cases from production traces: trace2eval-compatible ``build``, ``run``, ``check``.

Scalable (exact Jaccard dedup with prefix filtering) and process-aware (expectations on the
tools, escalation, plan, friction and retrieval of agent traces). See ``docs/regression.md``.

The stages, in the order data flows through them, and their entry points:

* :mod:`.mine` — trace logs → ``cases.jsonl``: :func:`~.mine.build.build_evalset`
* :mod:`.run` — cases + candidate runs → a run result: :func:`~.run.run.run_cases`
  (with :func:`~.run.run.load_cases`, :func:`~.run.outputs.load_outputs`,
  :func:`~.run.outputs.outputs_from_traces`)
* :mod:`.gate` — two run results → a verdict: :func:`~.gate.gate.compare`
  (with :func:`~.gate.runfile.load_run`)
* :mod:`.report` — rendering: :func:`~.report.render.render_check`,
  :func:`~.report.report_html.render_check_html`

Shared by every stage: the case model (:mod:`.case`: ``Case``, ``Check``, ``Evidence``), the
check kinds (:mod:`.checks`, text checks in :mod:`.text_checks`), text normalisation
(:mod:`.textnorm`) and the closed vocabularies (:mod:`.vocabulary`).

The entry points are importable from here (``from spanguard_processor.regression import
compare``); each is loaded on first use, so importing one stage does not import the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..common.lazy import lazy_exports

if TYPE_CHECKING:
    from .gate.gate import compare
    from .gate.runfile import load_run
    from .mine.build import build_evalset
    from .report.render import render_check
    from .report.report_html import render_check_html
    from .run.outputs import load_outputs, outputs_from_traces
    from .run.run import load_cases, run_cases

__all__ = [
    "build_evalset",
    "compare",
    "load_cases",
    "load_outputs",
    "load_run",
    "outputs_from_traces",
    "render_check",
    "render_check_html",
    "run_cases",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "build_evalset": ".mine.build",
        "compare": ".gate.gate",
        "load_cases": ".run.run",
        "load_outputs": ".run.outputs",
        "load_run": ".gate.runfile",
        "outputs_from_traces": ".run.outputs",
        "render_check": ".report.render",
        "render_check_html": ".report.report_html",
        "run_cases": ".run.run",
    },
)
