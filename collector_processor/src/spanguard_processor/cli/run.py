"""``spanguard run``: call an app in-process for every variant of a suite, then gate."""

from __future__ import annotations

from pathlib import Path

import click

from .fairness import evaluation_options, finish, gate_config, load_plugins

__all__ = ["run"]


@click.command()
@click.argument("suite_path", metavar="SUITE", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--app", "app_ref", required=True, metavar="MODULE:FUNCTION",
              help="The app: app(prompt, assignments) -> str or {'text', 'metadata'}; "
                   "plain or async.")
@click.option("--repeats", type=click.IntRange(min=1), default=1, show_default=True,
              help="Calls per variant (for stochastic apps).")
@click.option("--concurrency", type=click.IntRange(min=1), default=1, show_default=True,
              help="Variants in flight at once (threads, or tasks for an async app).")
@evaluation_options
@click.pass_context
def run(ctx: click.Context, suite_path: Path, app_ref: str, repeats: int, concurrency: int,
        output: Path | None, gate: str, alpha: float, bootstrap: int, permutations: int,
        random_seed: int, fmt: str, plugins: tuple[str, ...]) -> None:
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
    suite = load_suite(suite_path)
    app = load_callable(app_ref, "the app", field="--app")
    observations, errors = run_app(app, suite.variants, repeats=repeats,
                                   concurrency=concurrency)
    for error in errors:
        click.echo(f"app error on {error['id']} (repeat {error['repeat']}): {error['error']}",
                   err=True)
    ev, _ = evaluate_suite(suite, observations, config, errors=errors)
    finish(ctx, ev, output, fmt)
