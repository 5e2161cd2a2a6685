"""``spanguard store``: check a span store in depth, or salvage a damaged one."""

from __future__ import annotations

from pathlib import Path

import click

from ..collector.salvage import check_store, recover_store

__all__ = ["store"]


@click.group()
def store() -> None:
    """Check span stores, and copy what is readable out of a damaged one."""


@store.command()
@click.argument("stores", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
def check(stores: tuple[Path, ...]) -> None:
    """Check STORES in depth: SQLite's integrity check, every stored batch against its
    checksum and every index row against its batch. Exit 2 naming the first problem.

    \b
    Example:
      spanguard store check spans.db
    """
    for path in stores:
        summary = check_store(path)
        click.echo(
            f"{path}: ok ({summary.spans} span(s) in {summary.batches} batch(es); "
            f"{summary.released} trace(s) released, {summary.pending} pending)"
        )
        if summary.without_rows:
            shown = ", ".join(map(str, summary.without_rows[:10]))
            more = "…" if len(summary.without_rows) > 10 else ""
            click.echo(
                f"{path}: {len(summary.without_rows)} batch(es) have no index row "
                f"(batch {shown}{more}): a writer stopped before indexing them, or the rows "
                "were deleted; readers index them from their bodies, and the next "
                "`spanguard serve` on this store writes their rows.",
                err=True,
            )


@store.command()
@click.argument("damaged", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("new", type=click.Path(dir_okay=False, path_type=Path))
def recover(damaged: Path, new: Path) -> None:
    """Copy every readable span of the store DAMAGED into the new store NEW.

    Each stored request body is read on its own, checked against its checksum and decoded;
    the span index is rebuilt from the bodies. The file's pages (and its WAL's) are then
    scanned without SQLite, so a store cut short or partly overwritten keeps every batch
    whose pages survive, and the surviving index rows tell what was lost. Every recovered
    trace is released (one whose root span was lost is partial). What could not be read is
    listed.

    \b
    Example:
      spanguard store recover spans.db spans-recovered.db
      spanguard serve --store spans-recovered.db
    """
    salvage = recover_store(damaged, new)
    indexed = (
        f" of the {salvage.indexed_spans} its index listed"
        if salvage.indexed_spans is not None
        else ""
    )
    click.echo(
        f"recovered {salvage.spans} span(s){indexed} in {salvage.batches} batch(es), "
        f"{salvage.traces} trace(s), into {new}"
    )
    if salvage.lost_spans:
        click.echo(
            f"lost: {salvage.lost_spans} span(s) of the batches that could not be read, as the "
            f"surviving index rows list them ({salvage.lost_traces} trace(s) lost whole); "
            "batches whose index rows were lost too are not counted",
            err=True,
        )
    if salvage.problems:
        shown = "; ".join(salvage.problems[:5])
        more = f" (and {len(salvage.problems) - 5} more)" if len(salvage.problems) > 5 else ""
        click.echo(f"{damaged}: {len(salvage.problems)} problem(s): {shown}{more}", err=True)
