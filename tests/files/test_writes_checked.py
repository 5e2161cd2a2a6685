"""A write that fails is an error (exit 2, "could not write PATH: …"), never a success, a
traceback or a partial file; a command's outputs are written all or none.

Measured at 5ef49cb: ``traces convert -o /dev/full`` exit 0 "wrote 24 agent record(s)"; on a
full 128 KiB tmpfs ``traces convert`` and ``fairness`` exit 3 with an ``OSError: [Errno 28]``
traceback, and ``cases run -o r.json --markdown r.md`` exit 0 with r.md missing."""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from spanguard_processor.common.writes import WriteFailed, output_transaction, write_text_atomic

from .conftest import FAST, Workspace, invoke

FULL = Path("/dev/full")


def _dev_full() -> Path:
    if not FULL.exists() or not stat.S_ISCHR(FULL.stat().st_mode):
        pytest.skip("/dev/full is not a character device here")
    return FULL


def _tmpfs(tmp_path: Path, name: str, options: str) -> Iterator[Path]:
    """A tmpfs mounted with ``options`` (root only: skipped, saying why, where mounting is not
    permitted), unmounted afterwards."""
    mount = tmp_path / name
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


@pytest.fixture()
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 128 KiB tmpfs."""
    yield from _tmpfs(tmp_path, "tiny", "size=128k")


@pytest.fixture()
def read_only_disk(tmp_path: Path) -> Iterator[Path]:
    """A read-only tmpfs."""
    yield from _tmpfs(tmp_path, "ro", "size=128k,ro")


def _fill(disk: Path, leave: int) -> None:
    """Fill ``disk`` up to ``leave`` free bytes."""
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    (disk / "filler").write_bytes(b"x" * max(free - leave, 0))


def _listing(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def test_dev_full_as_the_output_of_convert_is_an_error(workspace: Workspace) -> None:
    full = _dev_full()
    result = invoke("traces", "convert", workspace.traces, "-f", "fairtrace", "-o", full)
    assert result.exit_code == 2, result.output
    assert "Error: could not write /dev/full: no space left on device." in result.output
    assert stat.S_ISCHR(full.stat().st_mode)  # written in place, never replaced


def test_dev_full_as_the_markdown_of_cases_run_writes_nothing(workspace: Workspace) -> None:
    full = _dev_full()
    out = workspace.root / "r.json"
    result = invoke(
        "cases",
        "run",
        "--cases",
        workspace.cases,
        "--outputs",
        workspace.outputs,
        "-o",
        out,
        "--markdown",
        full,
    )
    assert result.exit_code == 2, result.output
    assert "could not write /dev/full: no space left on device" in result.output
    assert not out.exists()  # all or none: the run file written before it is taken back


def test_dev_null_as_an_output_is_written_in_place(workspace: Workspace) -> None:
    result = invoke("traces", "convert", workspace.traces, "-o", "/dev/null")
    assert result.exit_code == 0, result.output
    assert stat.S_ISCHR(Path("/dev/null").stat().st_mode)


def test_convert_onto_a_full_disk_is_exit_2_and_leaves_nothing(
    workspace: Workspace, tiny_disk: Path
) -> None:
    _fill(tiny_disk, 4096)
    out = tiny_disk / "records.jsonl"
    result = invoke("traces", "convert", workspace.traces, "-f", "fairtrace", "-o", out)
    assert result.exit_code == 2, result.output
    assert f"could not write {out}: no space left on device" in result.output
    assert sorted(p.name for p in tiny_disk.iterdir()) == ["filler"]


def test_fairness_on_a_full_disk_keeps_the_earlier_reports(
    workspace: Workspace, tiny_disk: Path
) -> None:
    reports = tiny_disk / "reports"
    first = invoke("fairness", workspace.suite, workspace.records, "-o", reports, *FAST)
    assert first.exit_code in (0, 1), first.output
    before = _listing(reports)
    assert set(before) == {"report.json", "report.md", "junit.xml", "report.html", "history.jsonl"}
    _fill(tiny_disk, 24 * 1024)  # room for some of the next reports, not all
    result = invoke("fairness", workspace.suite, workspace.records, "-o", reports, *FAST)
    assert result.exit_code == 2, result.output
    assert "no space left on device" in result.output and "Error: could not write" in result.output
    assert _listing(reports) == before  # every earlier output intact, no temporary file


def test_cases_run_on_a_full_disk_writes_all_or_none(workspace: Workspace, tiny_disk: Path) -> None:
    out, markdown = tiny_disk / "r.json", tiny_disk / "r.md"
    _fill(tiny_disk, 8 * 1024)  # the run file fits, the run file and the table do not
    result = invoke(
        "cases",
        "run",
        "--cases",
        workspace.cases,
        "--outputs",
        workspace.outputs,
        "-o",
        out,
        "--markdown",
        markdown,
    )
    assert result.exit_code == 2, result.output
    assert "no space left on device" in result.output
    assert sorted(p.name for p in tiny_disk.iterdir()) == ["filler"]


def test_a_transaction_puts_back_what_it_replaced_and_removes_what_it_created(
    tmp_path: Path,
) -> None:
    kept, new = tmp_path / "kept.txt", tmp_path / "new.txt"
    kept.write_text("before")
    with pytest.raises(WriteFailed), output_transaction():
        write_text_atomic(kept, "after")
        write_text_atomic(new, "created")
        assert kept.read_text() == "after"
        raise WriteFailed(tmp_path / "third", "no space left on device")
    assert kept.read_text() == "before" and not new.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.txt"]


def test_an_output_gets_the_permissions_of_a_plain_file_or_of_the_one_it_replaces(
    tmp_path: Path,
) -> None:
    new, kept = tmp_path / "new.txt", tmp_path / "kept.txt"
    umask = os.umask(0o022)
    try:
        write_text_atomic(new, "x")
        kept.write_text("old")
        kept.chmod(0o640)
        write_text_atomic(kept, "new")
    finally:
        os.umask(umask)
    assert stat.S_IMODE(new.stat().st_mode) == 0o644  # not mkstemp's 0600
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640


def test_a_read_only_file_system_is_named(workspace: Workspace, read_only_disk: Path) -> None:
    out = read_only_disk / "records.jsonl"
    result = invoke("traces", "convert", workspace.traces, "-o", out)
    assert result.exit_code == 2, result.output
    assert result.output == f"Error: could not write {out}: read-only file system.\n"
