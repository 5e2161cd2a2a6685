"""Hostile inputs × the commands that read them, shared by ``test_hostile_matrix.py`` (small
sizes, in process) and ``bench/bench_hostile_files.py`` (full sizes, one process per cell, peak
RSS and time measured): every cell must exit 2 with a one-line message, no traceback, every
input unchanged and no output written."""

from __future__ import annotations

import gzip
import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .conftest import Workspace

MIB = 1 << 20


@dataclass(frozen=True)
class Sizes:
    """How large the streams are: small for the test suite, full for the bench."""

    nul: int = 1 * MIB
    line: int = 2 * MIB  # one JSON line (the test lowers SPANGUARD_MAX_LINE_BYTES below it)
    sparse: int = 0  # a sparse file of this size as a suite (0: not tried)


FULL = Sizes(nul=64 * MIB, line=200 * MIB, sparse=2048 * MIB)


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _nul(path: Path, size: int) -> Path:
    with path.open("wb") as handle:
        handle.truncate(size)  # sparse: reads as NUL bytes, costs no disk
    return path


def _huge_line(path: Path, size: int) -> Path:
    with path.open("wb") as handle:
        handle.write(b'{"trace_id": "' + b"a" * 32 + b'", "output": "')
        chunk = b"x" * MIB
        for _ in range(size // MIB):
            handle.write(chunk)
        handle.write(b'"}\n')
    return path


def _bomb() -> bytes:
    lines = ['dataset: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    return ("\n".join([*lines, "metrics: [*a8]"]) + "\n").encode()


def _truncated(path: Path, ws: Workspace, slot: str) -> Path:
    source = {
        "suite": ws.suite,
        "run": ws.run,
        "cases": ws.cases,
        "outputs": ws.outputs,
        "import": ws.suite,
        "report": ws.report,
        "history": ws.report.parent / "history.jsonl",
    }.get(slot, ws.traces)
    data = source.read_bytes()
    if slot in ("traces", "spans", "log"):
        packed = gzip.compress(ws.spans.read_bytes() if slot == "spans" else data)
        return _write(path, packed[: len(packed) // 3])
    return _write(path, data[: len(data) // 2])


_WRONG = {
    "suite": "cases",
    "traces": "suite",
    "spans": "traces",
    "log": "run",
    "evaluation": "cases",
    "cases": "outputs",
    "outputs": "suite",
    "run": "cases",
    "import": "suite",
    "report": "cases",
    "history": "cases",
}


def _wrong_kind(path: Path, ws: Workspace, slot: str) -> Path:
    return _write(path, getattr(ws, _WRONG[slot]).read_bytes())


Make = Callable[[Path, Workspace, str, Sizes], Path]

#: name → how to make it (in a folder, for a slot); the file's name ends as its slot expects
KINDS: dict[str, Make] = {
    "empty": lambda p, ws, slot, s: _write(p, b""),
    "binary": lambda p, ws, slot, s: _write(
        p, b"\x89PNG\r\n\x1a\n" + random.Random(7).randbytes(4096)
    ),
    "NUL stream": lambda p, ws, slot, s: _nul(p, s.nul),
    "deep JSON": lambda p, ws, slot, s: _write(p, b"[" * 100_000 + b"]" * 100_000 + b"\n"),
    "YAML alias bomb": lambda p, ws, slot, s: _write(p, _bomb()),
    "huge line": lambda p, ws, slot, s: _huge_line(p, s.line),
    "directory": lambda p, ws, slot, s: (p.mkdir(), p)[1],
    "/dev/zero": lambda p, ws, slot, s: Path("/dev/zero"),
    "truncated": lambda p, ws, slot, s: _truncated(p, ws, slot),
    "wrong kind": lambda p, ws, slot, s: _wrong_kind(p, ws, slot),
    "unicode path": lambda p, ws, slot, s: _write(p.with_name("ünïcødé ✓ файл" + p.suffix), b""),
}


@dataclass(frozen=True)
class Command:
    """A command with one input slot taken by the hostile file ``{h}``."""

    name: str
    slot: str
    suffix: str
    args: Callable[[Path, Workspace, Path], list[str | Path]]  # (hostile, ws, out folder)


COMMANDS: tuple[Command, ...] = (
    Command(
        "traces convert",
        "traces",
        ".jsonl",
        lambda h, ws, o: ["traces", "convert", h, "-o", o / "out.jsonl"],
    ),
    Command(
        "traces export",
        "traces",
        ".jsonl",
        lambda h, ws, o: ["traces", "export", "--store", h, "-o", o / "out.jsonl"],
    ),
    Command("ingest", "spans", ".jsonl", lambda h, ws, o: ["ingest", h, "--store", o / "spans.db"]),
    Command(
        "fairness SUITE",
        "suite",
        ".yaml",
        lambda h, ws, o: ["fairness", h, ws.records, "-o", o / "reports"],
    ),
    Command(
        "fairness TRACES",
        "evaluation",
        ".jsonl",
        lambda h, ws, o: ["fairness", ws.suite, h, "-o", o / "reports"],
    ),
    Command(
        "cases build",
        "log",
        ".jsonl",
        lambda h, ws, o: ["cases", "build", h, "-o", o / "evalset", "--strict"],
    ),
    Command(
        "cases run --cases",
        "cases",
        ".jsonl",
        lambda h, ws, o: [
            "cases",
            "run",
            "--cases",
            h,
            "--outputs",
            ws.outputs,
            "-o",
            o / "run.json",
        ],
    ),
    Command(
        "cases run --outputs",
        "outputs",
        ".jsonl",
        lambda h, ws, o: [
            "cases",
            "run",
            "--cases",
            ws.cases,
            "--outputs",
            h,
            "-o",
            o / "run.json",
        ],
    ),
    Command(
        "check --baseline",
        "run",
        ".json",
        lambda h, ws, o: [
            "check",
            "--baseline",
            h,
            "--current",
            ws.run,
            "--markdown",
            o / "check.md",
        ],
    ),
    Command("compare", "report", ".json", lambda h, ws, o: ["compare", h, ws.report]),
    Command("history", "history", ".jsonl", lambda h, ws, o: ["history", h]),
    Command(
        "suite variants",
        "suite",
        ".yaml",
        lambda h, ws, o: ["suite", "variants", h, "-o", o / "variants.jsonl"],
    ),
    Command("suite plan", "suite", ".yaml", lambda h, ws, o: ["suite", "plan", h]),
    # nothing listens there: the input is refused before a request is tried
    Command(
        "ingest --via",
        "spans",
        ".jsonl",
        lambda h, ws, o: ["ingest", h, "--via", "http://127.0.0.1:9"],
    ),
    Command(
        "import promptfoo",
        "import",
        ".yaml",
        lambda h, ws, o: ["import", "promptfoo", h, o / "suite.json", "--metric", "refusal_gap"],
    ),
)


#: (command, kind) cells where exit 2 is not the answer: a lenient reader (trace2eval's outputs,
#: kept compatible) skips a cut last line, names it, and counts the rest
LENIENT = frozenset({("cases run --outputs", "truncated")})


def make(kind: str, command: Command, folder: Path, ws: Workspace, sizes: Sizes = Sizes()) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return KINDS[kind](folder / f"input{command.suffix}", ws, command.slot, sizes)


def snapshot(ws: Workspace) -> dict[str, tuple[int, int]]:
    """Every workspace file's size and modification time (inputs must stay unchanged)."""
    seen = {}
    for root, _, files in os.walk(ws.root):
        for name in files:
            status = os.stat(os.path.join(root, name))
            seen[os.path.join(root, name)] = (status.st_size, status.st_mtime_ns)
    return seen
