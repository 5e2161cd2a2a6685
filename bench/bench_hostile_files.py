"""Every command × every hostile input at full size, one process per cell: exit code, peak RSS
and wall time, and whether every input stayed unchanged and nothing was written.

The same cells as ``tests/files/test_hostile_matrix.py`` (which runs them small and in
process), here with a 64 MiB NUL stream, a 200 MiB line and a 2 GiB sparse suite, and the
default limits. Prints a Markdown table for docs/reliability.md.

    .venv/bin/python bench/bench_hostile_files.py            # ≈ 2 min on 2 cores
    .venv/bin/python bench/bench_hostile_files.py --only NUL  # the kinds whose name has NUL
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.files.conftest import build_workspace  # noqa: E402
from tests.files.hostile_inputs import (  # noqa: E402  (the cells the test runs, full size)
    COMMANDS,
    FULL,
    KINDS,
    LENIENT,
    make,
    snapshot,
)

_MEASURE = """
import resource, subprocess, sys, time
start = time.monotonic()
try:
    done = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=120)
    code, output = done.returncode, done.stdout + done.stderr
except subprocess.TimeoutExpired:
    code, output = "timeout", ""
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(code, rss, time.monotonic() - start)
sys.stdout.write(output)
"""


def _run(args: list[str | Path]) -> tuple[str, float, float, str]:
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
        timeout=180,
        check=True,
    )
    head, _, output = done.stdout.partition("\n")
    code, rss, seconds = head.split()
    return code, int(rss) / 1024, float(seconds), output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="only the kinds whose name contains this")
    only = parser.parse_args().only
    kinds = [k for k in KINDS if only.lower() in k.lower()]
    worst_rss, worst_time, failures = 0.0, 0.0, []
    with tempfile.TemporaryDirectory(prefix="spanguard-hostile-") as tmp:
        ws = build_workspace(Path(tmp) / "ws")
        rows = []
        for kind in kinds:
            cells = []
            for command in COMMANDS:
                cell = Path(tmp) / "cells" / f"{command.name}-{kind}".replace(" ", "_")
                hostile = make(kind, command, cell / "hostile", ws, FULL)
                out = cell / "out"
                out.mkdir(parents=True)
                before = snapshot(ws)
                code, rss, seconds, output = _run(command.args(hostile, ws, out))
                lenient = (command.name, kind) in LENIENT  # the rest counts: outputs written
                intact = snapshot(ws) == before and (lenient or not list(out.iterdir()))
                clean = "Traceback" not in output
                expected = ("0", "1") if lenient else ("2",)
                if code not in expected or not intact or not clean:
                    failures.append(
                        f"{command.name} × {kind}: exit {code}, intact {intact}, "
                        f"no traceback {clean}: {output.strip()[:200]}"
                    )
                worst_rss, worst_time = max(worst_rss, rss), max(worst_time, seconds)
                cells.append(f"{code} · {rss:.0f} · {seconds:.1f}")
                print(
                    f"{kind:<16} {command.name:<22} exit {code:<7} {rss:6.0f} MiB {seconds:5.1f} s",
                    file=sys.stderr,
                    flush=True,
                )
            rows.append(f"| {kind} | " + " | ".join(cells) + " |")
        sparse = Path(tmp) / "sparse-suite.json"
        with sparse.open("wb") as handle:
            handle.truncate(FULL.sparse)
        code, rss, seconds, _ = _run(["fairness", sparse, ws.records])
        worst_rss, worst_time = max(worst_rss, rss), max(worst_time, seconds)
        cells = ["–"] * len(COMMANDS)  # only where a suite is read whole
        cells[[c.name for c in COMMANDS].index("fairness SUITE")] = (
            f"{code} · {rss:.0f} · {seconds:.1f}"
        )
        rows.append("| 2 GiB sparse file | " + " | ".join(cells) + " |")
    print("| input | " + " | ".join(c.name for c in COMMANDS) + " |")
    print("|---|" + "---|" * len(COMMANDS))
    print("\n".join(rows))
    print(
        f"\nEach cell: exit code · peak RSS (MiB) · seconds. Worst RSS {worst_rss:.0f} MiB, "
        f"worst time {worst_time:.1f} s; {len(failures)} cell(s) off their promise."
    )
    for failure in failures:
        print(f"- {failure}")
    print(
        f"(this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} "
        f"MiB; {time.strftime('%Y-%m-%d')})"
    )


if __name__ == "__main__":
    main()
