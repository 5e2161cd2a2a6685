"""``spanguard import``: turn promptfoo / DeepEval / fairtrace files into a spanguard suite."""

from __future__ import annotations

from pathlib import Path

import click

__all__ = ["import_command"]


@click.command("import")
@click.argument("source", type=click.Choice(["promptfoo", "deepeval", "fairtrace-promptfoo",
                                             "fairtrace-deepeval"]))
@click.argument("src", metavar="SRC", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("out", metavar="OUT", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--metric", "metrics", multiple=True, required=True, metavar="TYPE",
              help="A metric of the suite (repeatable), e.g. refusal_gap.")
@click.option("--attribute", "attributes", multiple=True, metavar="NAME",
              help="A var (promptfoo) or additional_metadata key (DeepEval) that is a "
                   "counterfactual attribute (repeatable). promptfoo default: list-valued vars.")
@click.option("--prompt-var", default=None, metavar="NAME",
              help="promptfoo: the var holding the prompt (default: render the config's single "
                   "inline prompt, else the 'prompt' var).")
@click.option("--seed-var", default=None, metavar="NAME",
              help="promptfoo: the var naming each test's seed (default: metadata.seed_id, else "
                   "tests with equal non-attribute vars share a seed).")
@click.option("--force", is_flag=True, help="Replace OUT if it exists.")
def import_command(source: str, src: Path, out: Path, metrics: tuple[str, ...],
                   attributes: tuple[str, ...], prompt_var: str | None, seed_var: str | None,
                   force: bool) -> None:
    """Import SRC (a SOURCE file) as a suite of explicit variants written to OUT.

    Ids and counterfactual groups (seed ids) are kept; OUT is YAML for .yaml/.yml, else JSON,
    and is never overwritten without --force.

    \b
    Example:
      spanguard import promptfoo promptfooconfig.yaml suite.yaml --metric refusal_gap
      spanguard import deepeval goldens.json suite.json --metric helpfulness_gap
    Exit codes: 0 written, 2 bad input (the message names the file, line and field).
    """
    from ..importers import import_suite, write_suite

    suite = import_suite(source, src, metrics, prompt_var=prompt_var, attributes=attributes,
                         seed_var=seed_var)
    write_suite(out, suite, force=force)
    variants = suite["dataset"]["variants"]
    seeds = len({v["seed_id"] for v in variants})
    click.echo(f"wrote {len(variants)} variants in {seeds} seeds to {out}")
    if seeds == len(variants):
        click.echo("note: every variant is its own seed, so no counterfactual pair exists; "
                   "give seed ids or --attribute.", err=True)
