"""Render the CLI reference (docs/cli.md) from the commands' own ``--help`` text.

``python -m spanguard_processor.cli._reference > docs/cli.md`` regenerates it; a test fails when
the checked-in page and the help text drift apart.
"""

from __future__ import annotations

import click

from . import cli

__all__ = ["render_reference"]

_HELP = ["-h", "--help"]
_HEADER = """# CLI reference

Generated from `--help` by `python -m spanguard_processor.cli._reference > docs/cli.md`;
a test keeps it in sync. Exit codes for every command: 0 pass, 1 gate failed, 2 bad input or
usage, 3 internal error. Bad input includes an input with no records ("no records in FILE";
`traces convert|export --allow-empty` accept one), a file of another kind than the command
wants, an output that would replace an input, and an output that could not be written
("could not write PATH: no space left on device"); see docs/reliability.md.

## One option vocabulary

Every command spells the same thing the same way:

* `-o/--output PATH`: the command's main output; a file (`cases run`, `traces`, `init`,
  `suite variants`), or a folder where it writes a set of reports (`fairness` and `run`:
  report.json, report.md, junit.xml, report.html; `cases build`; `demo`).
* `--markdown/--junit/--html FILE`: one more rendering of the result, each to a file of its
  own, beside a main output that is one file or none (`cases run`, `check`).
* `--traces-out FILE`, `--records-out FILE`: a second output, named by what it holds.
* `--format`: how the result is printed on stdout (text, json, markdown), never a file's
  format; `-f/--output-format` is the format of the file `-o` writes (`traces`).
* `--redact`: leave prompts, responses and document text out of all that is written or stored.
* `--baseline FILE --current FILE`: the two inputs of a comparison (`check`, `compare`).
* `--tolerance-scale`: a multiplier of trace2eval's tolerances (`check`); `--min-change` and
  `--min-latency-change-ms`: a smaller change is never a regression.
* `--skip-bad`: skip bad input lines (counted and reported) instead of stopping at the first;
  `--strict`, a flag of its own: exit 2 when a command that skips bad lines by default
  (`cases build`) skipped any.

Inputs and outputs given as arguments stay arguments where a command copies one file into
another (`import SOURCE SRC OUT`, `store recover DAMAGED NEW`). Older spellings still work
and print a one-line note on stderr, e.g. `note: --out is deprecated; use --output`:
`-o/--out` (`cases build`, `cases run`, `demo`) is `-o/--output`; `--format` of `traces
convert|export` is `-f/--output-format`; `--redact-content` (`ingest`, `serve`) is `--redact`;
`compare BASELINE CANDIDATE` is `compare --baseline BASELINE --current CANDIDATE`; `compare
--tolerance` is `--min-change`. An old `SPANGUARD_<COMMAND>_<OPTION>` variable works too,
with the same note.
"""


def _walk(command: click.Command, path: list[str], ctx: click.Context) -> list[str]:
    # click caches a command's help option the first time it is built, under whatever context
    # that was; drop the cache so the page never depends on what ran before in the process.
    if hasattr(command, "_help_option"):
        command._help_option = None
    sections = [f"## `{' '.join(path)}`\n", "```text", command.get_help(ctx).rstrip(), "```\n"]
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is None or sub.hidden:
                continue
            sub_ctx = click.Context(
                sub,
                info_name=name,
                parent=ctx,
                terminal_width=100,
                max_content_width=100,
                help_option_names=_HELP,
            )
            sections += _walk(sub, [*path, name], sub_ctx)
    return sections


def render_reference() -> str:
    """The whole reference page as Markdown."""
    ctx = click.Context(
        cli,
        info_name="spanguard",
        terminal_width=100,
        max_content_width=100,
        help_option_names=_HELP,
    )
    return _HEADER + "\n" + "\n".join(_walk(cli, ["spanguard"], ctx))


if __name__ == "__main__":
    click.echo(render_reference(), nl=False)
