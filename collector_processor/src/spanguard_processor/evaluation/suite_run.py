"""A suite run concluded, as ``fairness`` and ``run`` both end: a mined suite's seeds linked to
their production traces (and, when asked, its traffic-weighted gaps), the reports and the
history written, the gen_ai.evaluation.result records made, and the gate's decision."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..emit.events import EvaluationEvent, fairness_events
from ..fairness.design.suite import Suite
from ..fairness.gate.results import Evaluation
from ..fairness.report.evidence_report import ReportOptions
from ..fairness.report.run_reports import RunReports, report_run
from ..mining.replay import WeightedGap, mined_provenance, traffic_weighted, write_production

__all__ = ["MinedReplay", "SuiteRunOutcome", "conclude_suite_run", "replay_mined"]


@dataclass(frozen=True)
class MinedReplay:
    """A suite from ``suite mine`` replayed against its production traffic (report-only)."""

    seeds: int = 0  # seeds linked to their production traces; 0 for a suite not mined
    weighted: tuple[WeightedGap, ...] = ()  # each metric's traffic-weighted gap, when asked
    production: Path | None = None  # production.md, when written into the output folder


@dataclass(frozen=True)
class SuiteRunOutcome:
    """What a suite run ends with: its reports, the mined replay, the OTLP records."""

    reports: RunReports  # what the reports show (redacted when asked), and the trend lines
    mined: MinedReplay
    events: tuple[EvaluationEvent, ...] = ()  # none unless asked for

    @property
    def passed(self) -> bool:
        """The gate's decision, the one the printed verdict and the exit code both follow."""
        return self.reports.evaluation.passed


def replay_mined(
    suite_path: Path,
    suite: Suite,
    ev: Evaluation,
    output: Path | None,
    options: ReportOptions,
    traffic_weights: bool,
) -> MinedReplay:
    """For a mined suite: its seeds linked to their production traces (production.md/json in
    the output folder) and, when ``traffic_weights``, the traffic-weighted gaps (no verdict)."""
    provenance = mined_provenance(suite_path)
    if not provenance:
        return MinedReplay()
    weighted = tuple(traffic_weighted(ev, suite, provenance)) if traffic_weights else ()
    if output is None:
        return MinedReplay(len(provenance), weighted)
    write_production(output, provenance, options.link, weighted, options.redact)
    return MinedReplay(len(provenance), weighted, output / "production.md")


def conclude_suite_run(
    suite_path: Path,
    suite: Suite,
    ev: Evaluation,
    output: Path | None,
    options: ReportOptions,
    *,
    label: str | None = None,
    events: bool = False,
    traffic_weights: bool = False,
) -> SuiteRunOutcome:
    """Replay a mined suite, write the reports and the history into ``output`` (when given;
    labelled ``label``), and make the evaluation's OTLP records when ``events``: with
    ``options.redact`` neither the reports nor the records carry app text."""
    mined = replay_mined(suite_path, suite, ev, output, options, traffic_weights)
    reports = report_run(ev, output, options, label=label)
    made = tuple(fairness_events(reports.evaluation)) if events else ()
    return SuiteRunOutcome(reports, mined, made)
