"""What ``fairness`` and ``run`` share on the command line — their statistics and gate options,
the suite's power table, the reports' console lines and the exit — in a module that is no
command (``cli/__init__.COMMANDS`` names none of the ``cli/_*`` modules), so no command imports
another."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from spanguard.exceptions import ConfigError

from ._common import check_files, exit_gate, in_command_terms, output_option, refuse_overwrite
from ._emit import resolve_endpoint, send_events
from ._suite_mine import echo_mined

if TYPE_CHECKING:  # the library loads numpy: not needed for --help
    from ..emit.otlp import Endpoint
    from ..fairness.design.suite import Suite
    from ..fairness.gate.config import GateConfig
    from ..fairness.gate.results import Evaluation
    from ..fairness.report.evidence_report import ReportOptions
    from ..fairness.report.run_reports import RunReports

__all__ = [
    "REPORT_FILES",
    "Begun",
    "GateArgs",
    "begin",
    "conclude",
    "echo_plan",
    "evaluation_options",
    "finish",
    "gate_config",
    "load_plugins",
    "metric_lines",
    "report_options",
]


#: What ``-o DIR`` holds after a run (the reports, and the history they are appended to).
REPORT_FILES = ("report.json", "report.md", "junit.xml", "report.html", "history.jsonl")


#: The statistics and gate options shared by ``fairness`` and ``run``, first to last.
_EVALUATION_OPTIONS = (
    output_option(
        directory=True,
        default=None,
        help="Directory for report.json, report.md, junit.xml, report.html.",
    ),
    click.option(
        "--gate",
        type=click.Choice(["default", "point", "upper-bound"]),
        default="default",
        show_default=True,
        help="default: PASS when the upper bound is under the threshold, "
        "FAIL when the data show gap > threshold (one-sided, Holm), else "
        "INCONCLUSIVE; point: fairtrace's gap > threshold; upper-bound: "
        "as default, but INCONCLUSIVE fails.",
    ),
    click.option(
        "--alpha",
        type=click.FloatRange(0, 1, min_open=True, max_open=True),
        default=0.05,
        show_default=True,
        help="Family-wise error rate for the gate.",
    ),
    click.option(
        "--bootstrap",
        "bootstrap",
        type=click.IntRange(min=0),
        default=2000,
        show_default=True,
        help="Seed-cluster bootstrap resamples.",
    ),
    click.option(
        "--permutations",
        type=click.IntRange(min=0),
        default=999,
        show_default=True,
        help="Within-seed permutations for p-values.",
    ),
    click.option(
        "--seed",
        "random_seed",
        type=int,
        default=0,
        show_default=True,
        help="Random seed for resampling (results are deterministic).",
    ),
    click.option(
        "--min-coverage",
        type=click.FloatRange(0.0, 1.0),
        default=0.95,
        show_default=True,
        help="Fail a metric when a group has a smaller share of its variants "
        "recorded (or when missingness depends on the group).",
    ),
    click.option(
        "--allow-partial",
        is_flag=True,
        help="Accept partial data: no coverage or missingness failures.",
    ),
    click.option(
        "--allow-inconclusive",
        is_flag=True,
        help="Exit 0 when a metric is INCONCLUSIVE (neither shown within nor "
        "beyond its threshold), with a warning line for each.",
    ),
    click.option(
        "--format",
        "fmt",
        type=click.Choice(["text", "json", "markdown"]),
        default="text",
        show_default=True,
        help="What to print on stdout.",
    ),
    click.option(
        "--plugin",
        "plugins",
        multiple=True,
        metavar="MODULE",
        help="Import MODULE first (it may register custom metrics).",
    ),
    click.option(
        "--trace-url",
        "trace_url",
        metavar="TEMPLATE",
        default=None,
        help="Link each evidence trace id in the reports to a trace viewer, e.g. "
        "http://localhost:16686/trace/{trace_id} (Jaeger).",
    ),
    click.option(
        "--redact",
        is_flag=True,
        default=False,
        help="Leave prompts and responses out of the reports (signals and ids stay).",
    ),
    click.option(
        "--label",
        "label",
        default=None,
        metavar="TEXT",
        help="Label of this run in the output folder's history.jsonl (default: "
        "the git commit, when run inside a git work tree).",
    ),
)


@dataclass(frozen=True)
class GateArgs:
    """The gate options of ``fairness`` and ``run``, as the user typed them."""

    gate: str
    alpha: float
    bootstrap: int
    permutations: int
    random_seed: int
    min_coverage: float = 0.95
    allow_partial: bool = False
    allow_inconclusive: bool = False


_GATE_ARGS = tuple(field.name for field in fields(GateArgs))


def evaluation_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The statistics and gate options shared by ``fairness`` and ``run``; the command gets the
    gate's eight (``--gate`` to ``--allow-inconclusive``) as one ``gate_args``, a
    :class:`GateArgs`."""

    @functools.wraps(command)
    def packed(*args: Any, **kwargs: Any) -> Any:
        kwargs["gate_args"] = GateArgs(**{name: kwargs.pop(name) for name in _GATE_ARGS})
        return command(*args, **kwargs)

    for option in reversed(_EVALUATION_OPTIONS):
        packed = option(packed)
    return packed


# GateConfig's fields that this command's options spell otherwise (the parameter names)
_GATE_OPTIONS = {
    "mode": "gate",
    "bootstrap_samples": "bootstrap",
    "permutation_samples": "permutations",
}


def gate_config(
    gate: str,
    alpha: float,
    bootstrap: int,
    permutations: int,
    random_seed: int,
    min_coverage: float = 0.95,
    allow_partial: bool = False,
    allow_inconclusive: bool = False,
) -> Any:
    from ..fairness import GateConfig

    try:
        return GateConfig(
            mode=gate,  # type: ignore[arg-type]
            alpha=alpha,
            bootstrap_samples=bootstrap,
            permutation_samples=permutations,
            seed=random_seed,
            min_coverage=min_coverage,
            allow_partial=allow_partial,
            allow_inconclusive=allow_inconclusive,
        )
    except ConfigError as exc:  # GateConfig names its fields; these options set them
        raise ConfigError(_GATE_OPTIONS.get(exc.parameter, exc.parameter), exc.detail) from None


def load_plugins(plugins: tuple[str, ...]) -> None:
    from ..common.references import import_module

    for name in plugins:
        import_module(name, "the plugin", error=lambda message: ConfigError("--plugin", message))


def report_options(trace_url: str | None, redact: bool) -> Any:
    """Validated before any work, so a bad --trace-url costs nothing (exit 2)."""
    from ..fairness.report.evidence_report import ReportOptions

    return ReportOptions(trace_url=trace_url, redact=redact)


@dataclass(frozen=True)
class Begun:
    """What ``fairness`` and ``run`` hold once their inputs are checked, before any work."""

    suite: Suite
    config: GateConfig
    options: ReportOptions
    endpoint: Endpoint | None


def begin(
    suite_path: Path,
    paths: tuple[Sequence[Path], Sequence[Path | None]],
    output: Path | None,
    plugins: tuple[str, ...],
    gate: GateArgs,
    report: tuple[str | None, bool],
    emit_otlp: str | None,
) -> Begun:
    """No output may replace an input (``paths``: the inputs, the other outputs); the plugins
    loaded; the suite checked, the gate's and the reports' options and the endpoint validated
    before the suite is loaded (``report``: the trace-link template and ``--redact``)."""
    from ..fairness import load_suite
    from ..inputs import guard

    inputs, outputs = paths
    refuse_overwrite(inputs, outputs, directories=[(output, REPORT_FILES)])
    load_plugins(plugins)
    check_files([(guard.SUITE, suite_path)])
    config = gate_config(
        gate.gate,
        gate.alpha,
        gate.bootstrap,
        gate.permutations,
        gate.random_seed,
        gate.min_coverage,
        gate.allow_partial,
        gate.allow_inconclusive,
    )
    options = report_options(*report)
    endpoint = resolve_endpoint(emit_otlp)
    return Begun(load_suite(suite_path), config, options, endpoint)


def conclude(
    ctx: click.Context,
    suite_path: Path,
    begun: Begun,
    ev: Evaluation,
    output: Path | None,
    fmt: str,
    *,
    label: str | None = None,
    traffic_weights: bool = False,
) -> NoReturn:
    """The evaluation concluded by the library (reports, history, a mined suite's replay, the
    OTLP records), then sent, printed and exited on."""
    from ..evaluation.suite_run import conclude_suite_run

    outcome = conclude_suite_run(
        suite_path,
        begun.suite,
        ev,
        output,
        begun.options,
        label=label,
        events=begun.endpoint is not None,
        traffic_weights=traffic_weights,
    )
    if begun.endpoint is not None:
        send_events(begun.endpoint, outcome.events)
    echo_mined(suite_path, outcome.mined, traffic_weights)
    finish(ctx, outcome.reports, output, fmt)


def finish(ctx: click.Context, reports: RunReports, output: Path | None, fmt: str) -> NoReturn:
    """Print the trend lines (after ``-o DIR``), a line per metric (PASS, FAIL, INCONCLUSIVE or
    NO_SIGNAL, with what a reader needs beside it) and the gate's verdict, then exit 0 (passed)
    or 1: the printed verdict and the exit code come from the same ``ev.passed``."""
    from ..fairness.report.reports import render_markdown, report_dict
    from ..fairness.report.verdict_text import gate_summary, tolerated

    ev, options = reports.evaluation, reports.options
    if fmt == "text":
        for line in reports.trends:
            click.echo(line)
    if fmt == "json":
        summary = report_dict(ev, options, scenarios=False)
        summary.pop("scenario_results")
        click.echo(json.dumps(summary, indent=2, allow_nan=False))
    elif fmt == "markdown":
        click.echo(render_markdown(ev, options), nl=False)
    else:
        for r in ev.results:
            for line in metric_lines(r):
                click.echo(line)
        if output is not None:
            click.echo(f"reports written to {output}")
    for r in tolerated(ev):  # one warning line per INCONCLUSIVE metric let through
        needs = f"; about {r.seeds_needed} seeds would decide it" if r.seeds_needed else ""
        click.echo(
            f"warning: {r.metric} is INCONCLUSIVE (neither shown within nor beyond "
            f"its threshold {r.threshold:g}{needs}); allowed by --allow-inconclusive",
            err=fmt != "text",
        )
    click.echo(
        in_command_terms(f"fairness gate {gate_summary(ev)}")
        + (f"; {len(ev.errors)} app error(s)" if ev.errors else ""),
        err=fmt != "text",
    )
    exit_gate(ev.passed, ctx)


def metric_lines(r: Any) -> list[str]:
    """A metric on the terminal: its verdict line, then indented notes (the diagnosis of a
    NO_SIGNAL metric, the seeds an INCONCLUSIVE one needs, why an interval is unbounded)
    and the top counterfactual pair of a metric that did not pass."""
    from ..common.markdown import console_text
    from ..fairness.gate.results import Verdict
    from ..fairness.report.attribute_text import attribute_lines
    from ..fairness.report.verdict_text import interval_text, label, metric_notes, number, reason

    silent = r.verdict == Verdict.NO_SIGNAL  # nothing was measured: no score to show
    score = "–" if silent else number(r.score)
    interval = "–" if silent else interval_text(r)
    lines = [
        f"{label(r.verdict):<12} {r.metric:<30} {score:>10} {interval:<20} "
        f"thr {r.threshold:g}  {in_command_terms(reason(r), mode='--gate')}".rstrip()
    ]
    lines += [f"{'':<13}{in_command_terms(line)}" for line in attribute_lines(r)]
    lines += [
        f"{'':<13}{in_command_terms(part)}" for note in metric_notes(r) for part in note.split("; ")
    ]  # a diagnosis lists what was seen, one a line
    if r.verdict in (Verdict.FAIL, Verdict.INCONCLUSIVE) and r.evidence:  # the top pair
        lines.append(f"{'':<13}{console_text(r.evidence[0].headline)}")  # app text: inert
    return lines


def echo_plan(suite_: Any, repeats: int, alpha: float, *, err: bool = True) -> None:
    """The suite's power table (``spanguard suite plan``); on stderr for run and fairness, so
    their stdout stays the verdict (and valid JSON with --format json)."""
    from ..fairness.plan import plan_lines, plan_suite

    for line in plan_lines(plan_suite(suite_, repeats, alpha)):
        click.echo(line, err=err)
