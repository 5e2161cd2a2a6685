"""The console summary of ``spanguard suite mine``, and its check of ``--store``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from spanguard.exceptions import InputError

if TYPE_CHECKING:  # the file checks load yaml and the store's schema: not needed for --help
    from ..evaluation.suite_run import MinedReplay
    from ..inputs.guard import FileKind

__all__ = ["echo_mined", "echo_mining", "nothing_to_write", "only_stores"]

_LISTED = 10


def nothing_to_write(result: Any, output: Path, min_users: int) -> str:
    """Why no suite was written: no text at all to mine, or no template sent often enough."""
    if result.traces and result.no_content == result.traces:
        return (
            f"all {result.traces} request(s) read were recorded without content: there is no "
            "text to mine (record with spanguard.configure(capture_content=True)); "
            f"{output} was not written."
        )
    return (
        f"no template was sent by {min_users} or more distinct users with a clean mention; "
        f"{output} was not written."
    )


def only_stores(found: Sequence[tuple[Path, FileKind]], stores: Sequence[Path]) -> None:
    """Refuse a ``--store`` that is no span store (it would be read as traces, a text file's
    lines skipped one by one), before anything is read."""
    from ..inputs import guard

    for path, kind in found:
        if path in stores and kind != guard.FileKind.STORE:
            raise InputError(
                f"is {kind.value}, not a span store (from `serve` or `ingest`); give other "
                "traces as TRACES arguments.",
                file=str(path),
                field="--store",
            )


def _echo_privacy(result: Any, min_users: int) -> None:
    """Who the floor counted, and what was scrubbed (counts only: never the data)."""
    if result.duplicates:
        click.echo(
            f"note: {result.duplicates} request(s) were read twice (the same trace id in two "
            "inputs, e.g. an export and its store) and counted once",
            err=True,
        )
    with_content = result.traces - result.no_content
    if with_content and not result.identified:
        click.echo(
            "warning: no request records a user or session id (user.id, enduser.id, "
            "langfuse.user.id, session.id, langfuse.session.id, gen_ai.conversation.id): "
            "--min-users counts requests instead, so one user sending a sentence "
            f"{min_users} times can make it a seed; health and finance statements are "
            "never seeds without them",
            err=True,
        )
    elif result.identified < result.traces:
        click.echo(
            f"note: {result.traces - result.identified} of {result.traces} request(s) record "
            "no user or session id; each counts as its own user",
            err=True,
        )
    if result.personal:
        kinds = ", ".join(f"{kind} {count}" for kind, count in result.personal)
        click.echo(f"  scrubbed personal data before templating: {kinds} (request(s) by kind)")


def echo_mining(result: Any, output: Path, min_users: int, observe: bool) -> None:
    from ..mining.observe import observe_lines

    for problem in result.problems:
        click.echo(f"skipped: {problem}", err=True)
    if result.skipped > len(result.problems):
        click.echo(
            f"skipped {result.skipped - len(result.problems)} more unreadable line(s)", err=True
        )
    click.echo(
        f"read {result.traces} request(s): {result.no_content} recorded without content "
        f"(not mined), {result.mention_free} mention no protected attribute, "
        f"{result.mention_requests} do"
    )
    _echo_privacy(result, min_users)
    for reason, count in result.unclean:
        click.echo(f"  left out {count} request(s) that cannot be swapped cleanly ({reason})")
    click.echo(
        f"{result.templates} template(s) in {result.clusters} cluster(s); "
        f"{result.below_min} cluster(s) ({result.below_min_requests} request(s)) under "
        f"--min-users {min_users}"
        + (f"; {result.cut} past --max-seeds" if result.cut else "")
        + (f"; {result.redacted_away} dropped by the redactor" if result.redacted_away else "")
    )
    if result.sensitive:
        click.echo(
            f"  left out {result.sensitive} cluster(s) ({result.sensitive_requests} request(s)) "
            f"stating health or finance facts that fewer than {min_users} recorded users share"
        )
    for seed in result.seeds[:_LISTED]:
        click.echo(
            f"  {seed.id}  {','.join(seed.attributes):<18} {seed.requests:>6} request(s)"
            f" ({seed.traffic_share:.1%} of traffic)  {seed.template[:70]!r}"
        )
    if len(result.seeds) > _LISTED:
        click.echo(f"  … and {len(result.seeds) - _LISTED} more seed(s)")
    if result.seeds:
        metrics = ", ".join(
            m.type + (f" (max_difference {m.max_difference})" if m.max_difference else "")
            for m in result.metrics
        )
        click.echo(
            f"wrote {len(result.seeds)} seed(s) to {output}, covering "
            f"{result.covered_requests} of {result.mention_requests} mention-bearing "
            f"request(s) ({result.covered_share:.1%}); metrics: {metrics}"
        )
    personal = sum(1 for s in result.seeds if s.values_users < min_users)
    if personal:
        click.echo(
            f"note: {personal} seed(s) hold numbers (amounts, ids, dates) fewer than "
            f"{min_users} users sent — one user's values; mask them with "
            "--redact-hook if they may identify someone (metadata.mined.values_users)",
            err=True,
        )
    if observe:
        for line in observe_lines(result.observed):
            click.echo(line)


traffic_weights_option = click.option(
    "--traffic-weights",
    "traffic_weights",
    is_flag=True,
    help="For a suite from `suite mine`: also report each metric's gap with seeds weighted "
    "by their production traffic share (report-only, a different estimand; "
    "production.md).",
)


def echo_mined(suite_path: Path, mined: MinedReplay, traffic_weights: bool) -> None:
    """A mined suite's replay on stderr: the traffic-weighted gaps (never a verdict) and where
    its seeds were linked to their production traces; a note when --traffic-weights has none."""
    if not mined.seeds:
        if traffic_weights:
            click.echo(
                "note: --traffic-weights applies to suites written by `suite mine`; "
                f"{suite_path} has no mined seeds.",
                err=True,
            )
        return
    for w in mined.weighted:
        click.echo(
            f"traffic-weighted (report-only, a different estimand): {w.metric} "
            f"{w.weighted:.4f} (unweighted {w.unweighted:.4f}, {w.seeds} seeds)",
            err=True,
        )
    if mined.production is not None:
        click.echo(
            f"mined suite: {mined.seeds} seed(s) linked to their production traces "
            f"in {mined.production}",
            err=True,
        )
