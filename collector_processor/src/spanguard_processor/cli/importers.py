"""``spanguard import``: turn promptfoo / DeepEval / fairtrace files into a spanguard suite."""

from __future__ import annotations

from pathlib import Path

import click

__all__ = ["import_command"]


@click.command("import")
@click.argument(
    "source",
    type=click.Choice(["promptfoo", "deepeval", "fairtrace-promptfoo", "fairtrace-deepeval"]),
)
@click.argument("src", metavar="SRC", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("out", metavar="OUT", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--metric",
    "metrics",
    multiple=True,
    required=True,
    metavar="TYPE",
    help="A metric of the suite (repeatable), e.g. refusal_gap.",
)
@click.option(
    "--attribute",
    "attributes",
    multiple=True,
    metavar="NAME",
    help="A var (promptfoo) or additional_metadata key (DeepEval) that is a "
    "counterfactual attribute (repeatable). promptfoo default: list-valued vars.",
)
@click.option(
    "--prompt-var",
    default=None,
    metavar="NAME",
    help="promptfoo: the var holding the prompt (default: render the config's single "
    "inline prompt, else the 'prompt' var).",
)
@click.option(
    "--seed-var",
    default=None,
    metavar="NAME",
    help="The var (promptfoo) or additional_metadata key (DeepEval) naming each "
    "test's seed (default: metadata.seed_id, else tests with equal "
    "non-attribute values share a seed).",
)
@click.option(
    "--records-out",
    "records_out",
    default=None,
    metavar="FILE",
    type=click.Path(dir_okay=False, path_type=Path),
    help="promptfoo results.json: also write its recorded outputs as fairtrace "
    "records (JSONL) for `spanguard fairness OUT FILE`.",
)
@click.option("--force", is_flag=True, help="Replace OUT (and --records-out) if it exists.")
def import_command(
    source: str,
    src: Path,
    out: Path,
    metrics: tuple[str, ...],
    attributes: tuple[str, ...],
    prompt_var: str | None,
    seed_var: str | None,
    records_out: Path | None,
    force: bool,
) -> None:
    """Import SRC (a SOURCE file) as a suite of explicit variants written to OUT.

    Ids and counterfactual groups (seed ids) are kept; OUT is YAML for .yaml/.yml, else JSON,
    and is never overwritten without --force.

    \b
    Example:
      spanguard import promptfoo promptfooconfig.yaml suite.yaml --metric refusal_gap
      spanguard import promptfoo results.json suite.yaml --metric refusal_gap \\
          --records-out records.jsonl && spanguard fairness suite.yaml records.jsonl
      spanguard import deepeval goldens.json suite.json --metric helpfulness_gap
    Exit codes: 0 written, 2 bad input (the message names the file, line and field).
    """
    from spanguard.exceptions import InputError

    from ..importers import import_variants, suite_of, write_records, write_suite
    from ..inputs import guard
    from ._common import check_files

    check_files([(guard.IMPORT_SOURCE, src)], [out, records_out])
    imported = import_variants(
        source, src, prompt_var=prompt_var, attributes=attributes, seed_var=seed_var
    )
    suite = suite_of(imported, metrics, src)
    recorded = [v for v in imported if v.response is not None]
    if records_out is not None and not recorded:
        raise InputError(
            "holds no recorded outputs, so there are no records to write; "
            "--records-out needs the results.json of 'promptfoo eval -o'.",
            file=str(src),
            field="--records-out",
        )
    if records_out is not None and records_out.exists() and not force:
        raise InputError(
            "the records file already exists; choose another path or pass --force to replace it.",
            file=str(records_out),
        )
    write_suite(out, suite, force=force)
    if records_out is not None:
        count = write_records(records_out, imported, force=force)
        click.echo(f"wrote {count} records to {records_out}")
    variants = suite["dataset"]["variants"]
    seeds = len({v["seed_id"] for v in variants})
    click.echo(f"wrote {len(variants)} variants in {seeds} seeds to {out}")
    if seeds == len(variants):
        click.echo(
            "note: every variant is its own seed, so no counterfactual pair exists; "
            "give seed ids or --attribute.",
            err=True,
        )
