"""A span store on read-only media (a snapshot, a mounted backup; issue 49 item 3): readers
open a cleanly stopped store ``immutable=1``, and refuse one whose WAL still holds commits
with a sentence saying what to do, instead of "unable to open database file"."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from spanguard_processor.cli import cli

from ..reliability.servers import PROTO, request_bytes, running, spans_of_one_trace

pytestmark = pytest.mark.integration


@pytest.fixture
def read_only_mount(tmp_path: Path) -> Iterator[tuple[Path, list[Path]]]:
    """A tmpfs folder, and the files to put there before it is remounted read-only (root
    only: as another user a mode-0555 folder is the same, but root writes through it)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    if subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(folder)], capture_output=True
    ).returncode:
        pytest.skip("cannot mount a tmpfs here (not root)")
    files: list[Path] = []
    try:
        yield folder, files
    finally:
        subprocess.run(["umount", str(folder)], check=False)


def _remount_read_only(folder: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)


def _stopped_store(tmp_path: Path) -> Path:
    store = tmp_path / "spans.db"
    with running(store, wait_duration=0.0) as server:
        body = request_bytes(spans_of_one_trace(3, text="on read-only media"))
        reply = httpx.post(
            f"http://127.0.0.1:{server.http_port}/v1/traces", content=body, headers=PROTO
        )
        assert reply.status_code == 200
    return store


def test_an_intact_stopped_store_on_read_only_media_is_read(
    tmp_path: Path, read_only_mount: tuple[Path, list[Path]]
) -> None:
    folder, _ = read_only_mount
    shutil.copy(_stopped_store(tmp_path), folder / "spans.db")
    _remount_read_only(folder)
    runner = CliRunner()
    checked = runner.invoke(cli, ["store", "check", str(folder / "spans.db")])
    assert checked.exit_code == 0, checked.output
    assert "ok (3 span(s)" in checked.output
    out = tmp_path / "traces.jsonl"
    exported = runner.invoke(
        cli, ["traces", "export", "--store", str(folder / "spans.db"), "-o", str(out)]
    )
    assert exported.exit_code == 0, exported.output
    assert len(out.read_text().splitlines()) == 1
    recovered = runner.invoke(
        cli, ["store", "recover", str(folder / "spans.db"), str(tmp_path / "r.db")]
    )
    assert recovered.exit_code == 0 and "problem" not in recovered.output, recovered.output


def test_a_store_whose_wal_holds_commits_on_read_only_media_says_what_to_do(
    tmp_path: Path, read_only_mount: tuple[Path, list[Path]]
) -> None:
    folder, _ = read_only_mount
    shutil.copy(_stopped_store(tmp_path), folder / "spans.db")
    (folder / "spans.db-wal").write_bytes(b"\x37\x7f\x06\x82" + bytes(60))  # a log with content
    _remount_read_only(folder)
    result = CliRunner().invoke(cli, ["store", "check", str(folder / "spans.db")])
    assert result.exit_code == 2
    assert "is on read-only media with a write-ahead log (spans.db-wal)" in result.output
    assert "Traceback" not in result.output
