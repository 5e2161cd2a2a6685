"""``spanguard suite``: work with fairness suites outside ``spanguard run``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from ._common import renamed
from ._evaluation import echo_plan
from ._source import source_options

__all__ = ["suite"]


@click.group()
def suite() -> None:
    """Expand fairness suites for your own harness, plan their power, and mine them from
    production traffic."""


@suite.command()
@click.argument("suite_path", metavar="SUITE", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="JSONL file to write (replaced atomically); default: standard output.",
)
def variants(suite_path: Path, output: Path | None) -> None:
    """Write every variant of SUITE as JSONL: one {id, seed_id, prompt, assignments} per line,
    in suite order.

    Send each prompt through your own stack inside spanguard.request(seed_id=...,
    variant_id=id, assignments=...), record the spans (e.g. with spanguard serve), and
    `spanguard fairness SUITE traces.jsonl` matches the traces to the variants.

    \b
    Example:
      spanguard suite variants fairness.yaml -o variants.jsonl
    """
    from ..common.jsonio import dumps_line, write_jsonl
    from ..fairness.design.suite import suite_variants
    from ..inputs import guard
    from ._common import check_files

    check_files([(guard.SUITE, suite_path)], [output])
    rows = suite_variants(suite_path)
    if output is None:
        sys.stdout.write("".join(dumps_line(row) + "\n" for row in rows))
        return
    count = write_jsonl(output, rows)
    click.echo(f"wrote {count} variant(s) to {output}")


@suite.command()
@click.argument("suite_path", metavar="SUITE", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--repeats",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Calls per variant the run will make (as spanguard run --repeats).",
)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="Family-wise error rate of the gate.",
)
def plan(suite_path: Path, repeats: int, alpha: float) -> None:
    """Print each metric's design MDE on SUITE and the seeds it would need, without running
    anything.

    The design MDE is the smallest true gap the gate would detect 4 times in 5 on this suite
    (seeds × groups × repeats) when the app shows no variation of its own, at the worst-case
    variance of the metric's scale. A metric whose design MDE exceeds twice its threshold gets
    a warning with the number of seeds that would bring it there. `spanguard run` and
    `spanguard fairness` print the same table before they start.

    \b
    Example:
      spanguard suite plan fairness.yaml --repeats 3
    Exit codes: 0 the plan was printed (whatever it says), 2 bad input.
    """
    from ..fairness import load_suite
    from ..inputs import guard
    from ._common import check_files

    check_files([(guard.SUITE, suite_path)])
    echo_plan(load_suite(suite_path), repeats, alpha, err=False)


@suite.command()
@click.argument("traces", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--store",
    "stores",
    multiple=True,
    type=click.Path(path_type=Path),
    metavar="STORE",
    help="A span store (SQLite) to mine as well (repeatable).",
)
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The suite YAML file to write (replaced atomically).",
)
@click.option(
    "--lexicon",
    "lexicons",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="A YAML lexicon extending the shipped ones (repeatable; format in docs/suite-mining.md).",
)
@click.option(
    "--attribute",
    "attributes",
    multiple=True,
    metavar="NAME",
    help="Mine only this attribute (repeatable): gender, age, ethnicity, "
    "nationality, religion, disability, or one a --lexicon adds.",
)
@click.option(
    "--min-users",
    type=click.IntRange(min=2),
    default=3,
    show_default=True,
    help="Keep only templates at least this many distinct users sent (user id, else "
    "session id; each request counts as one user when neither is recorded).",
)
@renamed("--min-requests", target="min_users", renamed_to="--min-users", type=click.IntRange(min=2))
@click.option(
    "--max-seeds",
    type=click.IntRange(min=1),
    default=None,
    help="Keep the most frequent templates only (default: all).",
)
@click.option(
    "--similarity",
    type=click.FloatRange(0, 1, min_open=True),
    default=0.8,
    show_default=True,
    help="Jaccard threshold merging near-identical templates.",
)
@click.option(
    "--metric",
    "metrics",
    multiple=True,
    metavar="TYPE",
    help="A metric of the suite (repeatable; default: escalation_parity, "
    "tool_use_parity, refusal_gap, and tool_name_gap, tool_count_gap, plan_length_gap, "
    "friction_point_gap where the traffic shows those signals).",
)
@click.option(
    "--threshold",
    type=click.FloatRange(0, 1, min_open=True),
    default=0.1,
    show_default=True,
    help="The rate metrics' threshold (count metrics keep their own: tool_count_gap 0.5, "
    "plan_length_gap and friction_point_gap 1).",
)
@click.option(
    "--redact-hook",
    metavar="MODULE:FUNCTION",
    default=None,
    help="The redactor run over every template and prompt written: f(key, text) -> "
    "text, or None to drop the seed (the processor's hook).",
)
@click.option(
    "--observe",
    is_flag=True,
    help="Also print the production requests' own escalation, tool-use and refusal "
    "rates by detected attribute value (observational, confounded).",
)
@source_options
def mine(
    traces: tuple[Path, ...],
    stores: tuple[Path, ...],
    output: Path,
    lexicons: tuple[Path, ...],
    attributes: tuple[str, ...],
    min_users: int,
    max_seeds: int | None,
    similarity: float,
    metrics: tuple[str, ...],
    threshold: float,
    redact_hook: str | None,
    observe: bool,
    source: str | None = None,
    since: Any = None,
    until: Any = None,
    explain: bool = False,
) -> None:
    """Mine a counterfactual fairness suite from production TRACES: the requests that mention
    a protected attribute become templates with a slot where the mention was, near-identical
    templates one seed, written as a fairtrace-compatible suite whose seeds link to their
    production trace ids.

    Only traces recorded with content can be mined (the rest are counted). A mention that
    cannot be swapped cleanly is left out and counted. Personal data (e-mail addresses,
    phone, card and IBAN-like numbers, URLs with user info, names) is scrubbed before anything
    is written or printed; a seed is a phrasing --min-users distinct users sent; a trace read
    twice (a file and its store) counts once. With --source the spans are read where they
    live (ClickHouse, Parquet: docs/sql-map.md), the same seeds as from their export. See
    docs/suite-mining.md.

    \b
    Example:
      spanguard suite mine traces.jsonl --store spans.db -o mined.yaml --max-seeds 50
      spanguard suite mine --source parquet://spans/ -o mined.yaml --observe
      spanguard run mined.yaml --app myapp:answer -o out
    Exit codes: 0 a suite was written, 2 bad input or no seed to write.
    """
    from ..inputs import guard
    from ..mining.run import MineRequest, run_mining
    from ._common import check_files
    from ._source import recorded_traces
    from ._suite_mine import echo_mining, nothing_to_write, only_stores

    if not traces and not stores and source is None:
        raise click.UsageError("give trace files, --store or --source.")
    if source is not None and (traces or stores):
        raise click.UsageError("give TRACES/--store or --source, not both.")
    if source is None and (since or until or explain):
        raise click.UsageError("--since, --until and --explain go with --source.")
    only_stores(check_files([(guard.TRACE_LOG, list(traces) + list(stores))], [output]), stores)
    recorded = None
    if source is not None:
        recorded = recorded_traces((), source, since, until, explain, inputs_name="TRACES")
    request = MineRequest(
        paths=tuple(traces) + tuple(stores),
        lexicons=lexicons,
        attributes=attributes,
        min_users=min_users,
        max_seeds=max_seeds,
        similarity=similarity,
        metrics=metrics,
        threshold=threshold,
        redact_hook=redact_hook,
        recorded=recorded,
    )
    result = run_mining(request, output)
    echo_mining(result, output, min_users, observe)
    if not result.seeds:
        from ._common import BadInput

        raise BadInput(nothing_to_write(result, output, min_users))
