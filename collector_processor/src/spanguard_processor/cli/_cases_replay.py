"""``cases run --app``: the candidate app replayed on every case's input, K times, through the
harness ``spanguard run`` uses; what it prints before (the number of calls and the smallest
change each metric can detect at that size, ``cases plan``'s table) and after (the calls that
failed)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click

from ..regression.case import Case
from ..regression.run.replay import Replay, ReplayFailure, replay_cases
from ..regression.run.run import RunResult, score_repeats
from ._app import call_progress, load_app
from ._cases_plan import echo_replay_plan
from ._common import BadInput

__all__ = ["MAX_LISTED_FAILURES", "replay_result"]

#: The replay lists the first few failed calls; the rest are counted.
MAX_LISTED_FAILURES = 5
#: The exit code of a replay stopped by Ctrl-C (128 + SIGINT, as a shell reports it).
EXIT_INTERRUPTED = 130


def replay_result(
    case_list: Sequence[Case],
    cases_path: Path,
    app_ref: str,
    adapter: str | None,
    adapter_options: tuple[str, ...],
    repeats: int,
    concurrency: int,
) -> RunResult:
    """Replay the cases against the app and score each case's repeats (``score_repeats``).

    The app's signature is read before the first call; a call that raised is a failed repeat,
    reported here; every call failing is bad input (exit 2); Ctrl-C stops the replay with
    nothing written (exit 130)."""
    app, adapted = load_app(app_ref, adapter, adapter_options)
    calls = len(case_list) * repeats
    echo_replay_plan(cases_path, repeats, err=True)  # the cost, before the first call
    click.echo(f"calling the app {calls} time(s), {concurrency} at a time", err=True)
    try:
        with call_progress(calls) as tick:
            replay = replay_cases(
                case_list,
                app,
                repeats=repeats,
                concurrency=concurrency,
                progress=tick,
                source=cases_path.as_posix(),
            )
    except KeyboardInterrupt:
        click.echo(
            "\ninterrupted: no new app call was started and the calls in flight ended; "
            "nothing was written.",
            err=True,
        )
        raise click.exceptions.Exit(EXIT_INTERRUPTED) from None
    if adapted is not None:
        adapted.raise_problems()  # a response the adapter cannot read is bad input (exit 2)
        if replay.all_failed:
            raise adapted.all_failed([_error(f) for f in replay.failures])
    for line in _failure_lines(replay):
        click.echo(line, err=True)
    if replay.all_failed:
        first = replay.failures[0]
        raise BadInput(
            f"every one of the {replay.calls} app call(s) failed (first, on {first.case_id} "
            f"repeat {first.repeat}: {first.failure.type}: {first.failure.message}); there is "
            "nothing to score -- fix the app or its setup and run again."
        )
    return score_repeats(case_list, replay.evidence)


def _error(failure: ReplayFailure) -> dict[str, object]:
    return {
        "id": failure.case_id,
        "repeat": failure.repeat,
        "error": f"{failure.failure.type}: {failure.failure.message}",
    }


def _failure_lines(replay: Replay) -> list[str]:
    """How many calls failed, and the first few with their case and repeat."""
    from ..common.markdown import console_text

    failures = replay.failures
    if not failures:
        return []
    lines = [
        f"{len(failures)} of {replay.calls} app call(s) failed; each is counted as a failed "
        "repeat of its case:"
    ]
    lines += [
        console_text(f"  {f.case_id} (repeat {f.repeat}): {f.failure.type}: {f.failure.message}")
        for f in failures[:MAX_LISTED_FAILURES]
    ]
    if len(failures) > MAX_LISTED_FAILURES:
        lines.append(f"  ... and {len(failures) - MAX_LISTED_FAILURES} more")
    return lines
