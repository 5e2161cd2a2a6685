"""Every input is a regular file within its limits, text where text belongs: a hostile one is
exit 2 naming the file, what is wrong and the limit, in bounded memory and within seconds.

Measured at 5ef49cb: 64 MiB of NUL bytes through ``traces convert`` or ``ingest`` took 76 s
and 1.7 GB before exit 2; ``/dev/zero`` as traces ran past 60 s; a 2 GiB suite was a
MemoryError traceback (exit 3) at 2.1 GB; ``/dev/zero`` as a suite or a baseline, the same."""

from __future__ import annotations

import functools
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import Workspace, invoke

MIB = 1 << 20
RSS_LIMIT_MIB = 400

_MEASURE = """
import resource, subprocess, sys, time
start = time.monotonic()
done = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=100)
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
print(done.returncode, rss, time.monotonic() - start)
sys.stdout.write(done.stdout + done.stderr)
"""


def _measured(*args: str | Path) -> tuple[int, float, float, str]:
    """Run ``spanguard ARGS`` in a fresh process: exit code, its peak RSS in MiB, seconds,
    and what it printed. A separate measuring process, so RUSAGE_CHILDREN is that one run's."""
    command = [
        sys.executable,
        "-c",
        "from spanguard_processor.cli import main; main()",
        *map(str, args),
    ]
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, *command],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    head, _, output = done.stdout.partition("\n")
    code, rss, seconds = head.split()
    return int(code), int(rss) / 1024, float(seconds), output


@pytest.fixture(scope="module")
def nul_64mib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hostile") / "nul.jsonl"
    with path.open("wb") as handle:
        handle.truncate(64 * MIB)  # sparse: reads as NUL bytes
    return path


@pytest.fixture(scope="module")
def sparse_2gib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hostile") / "suite.json"
    with path.open("wb") as handle:
        handle.truncate(2048 * MIB)
    return path


@functools.cache
def _startup_seconds() -> float:
    """The baseline, measured on this machine now: a command that reads nothing."""
    return _measured("fairness", "--help")[2]


def _assert_refused(args: list[str | Path], expected: str) -> None:
    code, rss, seconds, output = _measured(*args)
    assert code == 2, output
    assert "Traceback" not in output and expected in output, output
    assert rss < RSS_LIMIT_MIB, f"{rss:.0f} MiB"
    # a ratio, not a latency: refused at about the cost of starting (reading the input whole
    # would cost many times that)
    assert seconds < 20 * _startup_seconds(), f"{seconds:.1f} s, start {_startup_seconds():.1f} s"


@pytest.mark.slow  # 64 MiB read twice, 3.9 s on a loaded run (load ~9)
def test_nul_bytes_through_convert_and_ingest(workspace: Workspace, nul_64mib: Path) -> None:
    _assert_refused(
        ["traces", "convert", nul_64mib, "-o", workspace.root / "o.jsonl"],
        f"no spans found in {nul_64mib}: it holds binary data (a NUL byte at byte 0)",
    )
    _assert_refused(
        ["ingest", nul_64mib, "--store", workspace.root / "s.db"], f"no spans found in {nul_64mib}"
    )
    assert not (workspace.root / "o.jsonl").exists()


@pytest.mark.slow
def test_dev_zero_as_traces_suite_and_baseline(workspace: Workspace) -> None:
    zero = "/dev/zero"
    refused = "Error: /dev/zero: is a character device, not a regular file;"
    _assert_refused(["traces", "convert", zero, "-o", workspace.root / "o.jsonl"], refused)
    _assert_refused(["fairness", workspace.suite, zero], refused)
    _assert_refused(["fairness", zero, workspace.records], refused)
    _assert_refused(["check", "--baseline", zero, "--current", workspace.run], refused)


@pytest.mark.slow
def test_a_2_gib_suite_is_refused_by_its_size(workspace: Workspace, sparse_2gib: Path) -> None:
    _assert_refused(
        ["fairness", sparse_2gib, workspace.records],
        f"{sparse_2gib}: is 2 GiB; a fairness suite (JSON or YAML) is read whole "
        "and may be at most 64 MiB (set SPANGUARD_MAX_DOCUMENT_BYTES to raise the "
        "limit).",
    )


def test_the_document_limit_can_be_raised_and_lowered(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPANGUARD_MAX_DOCUMENT_BYTES", "100")
    result = invoke("check", "--baseline", workspace.run, "--current", workspace.run)
    assert result.exit_code == 2
    assert "may be at most 100 bytes (set SPANGUARD_MAX_DOCUMENT_BYTES" in result.output
    monkeypatch.setenv("SPANGUARD_MAX_DOCUMENT_BYTES", str(64 * MIB))
    same = invoke(
        "check", "--allow-inconclusive", "--baseline", workspace.run, "--current", workspace.run
    )
    assert same.exit_code == 0, same.output


def test_a_line_over_the_line_limit_names_file_and_line(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    traces = workspace.traces
    lines = traces.read_text().splitlines()
    long_line = json.dumps({"trace_id": "f" * 32, "output": "x" * 5000})
    traces.write_text("\n".join([lines[0], long_line, *lines[1:]]) + "\n")
    monkeypatch.setenv("SPANGUARD_MAX_LINE_BYTES", "4096")
    for args in (
        ["traces", "convert", traces, "-o", workspace.root / "o.jsonl"],
        ["fairness", workspace.suite, traces],
    ):
        result = invoke(*args)
        assert result.exit_code == 2, result.output
        assert (
            f"Error: {traces}:2: is longer than 4 KiB, the limit for one line (set "
            "SPANGUARD_MAX_LINE_BYTES to raise it)." in result.output
        )


def test_a_directory_or_a_pipe_where_a_file_belongs(workspace: Workspace, tmp_path: Path) -> None:
    result = invoke("check", "--baseline", tmp_path, "--current", workspace.run)
    assert result.exit_code == 2
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    result = invoke("fairness", fifo, workspace.records)  # opening it to read would hang
    assert result.exit_code == 2
    assert f"{fifo}: is a named pipe, not a regular file" in result.output


def test_measuring_rss_sees_a_large_allocation() -> None:
    """The RSS figure is real: a child that holds 100 MiB is measured as holding it."""
    script = "b = bytearray(100 * 1024 * 1024); b[::4096] = b'x' * len(b[::4096])"
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    rss = int(done.stdout.split()[1]) / 1024
    assert rss > 100, rss
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss > 0


@pytest.mark.parametrize("value", ["abc", "-5", "0"])
def test_a_bad_limit_in_the_environment_is_bad_input(
    workspace: Workspace, value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPANGUARD_MAX_DOCUMENT_BYTES", value)
    result = invoke("check", "--baseline", workspace.run, "--current", workspace.run)
    assert result.exit_code == 2
    assert result.output.startswith(f"Error: SPANGUARD_MAX_DOCUMENT_BYTES={value!r} ")
