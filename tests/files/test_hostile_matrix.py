"""Every command × every hostile input: exit 2 with one ``Error:`` line, no traceback, every
input unchanged, nothing written (the full sizes, with peak RSS and time, are
``bench/bench_hostile_files.py``'s; ``test_bounded_inputs.py`` measures RSS for the largest)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Workspace, invoke
from .hostile_inputs import COMMANDS, KINDS, LENIENT, Command, make, snapshot

_BY_NAME = {command.name: command for command in COMMANDS}


@pytest.fixture(autouse=True)
def _small_line_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPANGUARD_MAX_LINE_BYTES", str(1 << 20))  # the huge line is 2 MiB


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("name", sorted(_BY_NAME))
def test_a_hostile_input_is_exit_2_and_changes_nothing(
    workspace: Workspace, tmp_path: Path, name: str, kind: str
) -> None:
    command: Command = _BY_NAME[name]
    hostile = make(kind, command, tmp_path / "hostile", workspace)
    out = tmp_path / "out"
    out.mkdir()
    before = snapshot(workspace)
    hostile_before = hostile.read_bytes()[: 1 << 16] if hostile.is_file() else None
    result = invoke(*command.args(hostile, workspace, out))
    if (name, kind) in LENIENT:
        assert result.exit_code in (0, 1) and f"skipped: {hostile}:" in result.output
        return
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("Error: ")]
    assert len(lines) == 1, result.output
    assert snapshot(workspace) == before
    assert not list(out.iterdir())
    if hostile_before is not None:
        assert hostile.read_bytes()[: 1 << 16] == hostile_before
    if kind == "unicode path":
        assert str(hostile) in result.output
