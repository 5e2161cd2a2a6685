"""``spanguard run``: call an app in-process for every variant of a suite, then gate."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import click

from .fairness import evaluation_options, finish, gate_config, load_plugins, report_options

__all__ = ["run"]


@click.command()
@click.argument("suite_path", metavar="SUITE", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--app", "app_ref", required=True, metavar="MODULE:FUNCTION",
              help="The app: app(prompt, assignments) -> str or {'text', 'metadata'}; "
                   "plain or async.")
@click.option("--adapter", "adapter", default=None, metavar="NAME",
              help="Adapt a framework object named by --app: openai-chat, openai-responses, "
                   "openai-agents, langchain or langgraph (see docs/adapters.md).")
@click.option("--adapter-option", "adapter_options", multiple=True, metavar="KEY=VALUE",
              help="An option of the adapter, e.g. model=gpt-4o-mini (repeatable).")
@click.option("--repeats", type=click.IntRange(min=1), default=1, show_default=True,
              help="Calls per variant (for stochastic apps).")
@click.option("--concurrency", type=click.IntRange(min=1), default=1, show_default=True,
              help="Variants in flight at once (threads, or tasks for an async app).")
@evaluation_options
@click.pass_context
def run(ctx: click.Context, suite_path: Path, app_ref: str, adapter: str | None,
        adapter_options: tuple[str, ...], repeats: int, concurrency: int,
        output: Path | None, gate: str, alpha: float, bootstrap: int, permutations: int,
        random_seed: int, fmt: str, plugins: tuple[str, ...], trace_url: str | None,
        redact: bool) -> None:
    """Run the app over every variant of SUITE, capture its spans, evaluate and gate.

    The suite is validated completely before the first app call. The spans the app emits
    through the spanguard SDK are its trace; an app without spans may return
    {"text": ..., "metadata": {"trace": {...}}} instead. A variant whose call raises is
    reported and the gate fails, but the other variants still run.

    \b
    Example:
      spanguard run fairness.yaml --app myapp:answer --repeats 3 --concurrency 8 -o out
    Exit codes: 0 pass, 1 gate failed (or an app call failed), 2 bad input.
    """
    from ..fairness import load_suite
    from ..fairness.hooks import load_callable
    from ..fairness.pipeline import evaluate_suite
    from ..fairness.runner import run_app

    load_plugins(plugins)
    config = gate_config(gate, alpha, bootstrap, permutations, random_seed)
    options = report_options(trace_url, redact)
    suite = load_suite(suite_path)
    adapted = None
    if adapter is not None or adapter_options:
        from ..adapters.cli import adapted_app

        adapted = adapted_app(app_ref, adapter, adapter_options)
    app = adapted.call if adapted else load_callable(app_ref, "the app", field="--app")
    total = len(suite.variants) * repeats
    if sys.stderr.isatty():  # progress only on a terminal, never in logs or CliRunner
        lock = threading.Lock()
        with click.progressbar(length=total, label="calling the app", file=sys.stderr) as bar:

            def tick(done: int) -> None:
                with lock:  # worker threads report concurrently
                    bar.update(done)

            observations, errors = run_app(app, suite.variants, repeats=repeats,
                                           concurrency=concurrency, progress=tick)
    else:
        observations, errors = run_app(app, suite.variants, repeats=repeats,
                                       concurrency=concurrency)
    if adapted is not None:
        adapted.raise_problems()  # a response the adapter cannot read is bad input (exit 2)
    for error in errors:
        click.echo(f"app error on {error['id']} (repeat {error['repeat']}): {error['error']}",
                   err=True)
    ev, _ = evaluate_suite(suite, observations, config, errors=errors)
    finish(ctx, ev, output, fmt, options)
