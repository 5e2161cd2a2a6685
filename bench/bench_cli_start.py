"""Command-line start: `spanguard --help` (and a command's --help) beside `python -c pass`.

Each round starts every command once, in turn, as a fresh process (the console script next to
this interpreter), and `python -c pass` in the same round: the interpreter's own start is the
floor the command is measured against, so a loaded machine moves both. Per command it prints
the median wall time and CPU time (the child's user + system, from ``wait4``) over the rounds,
and the ratios to the floor. Target (issue 50): ``fairness --help`` in ≤ 0.5 s.

    .venv/bin/python bench/bench_cli_start.py                    # 15 rounds
    .venv/bin/python bench/bench_cli_start.py --quick            # 5 rounds
    .venv/bin/python bench/bench_cli_start.py --baseline ../main # also another checkout's code

``--baseline SRC`` runs the same commands on SRC's sources (``PYTHONPATH`` set to its
``collector_processor/src`` and ``sdk/src``) in the same rounds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMANDS = (("--help",), ("fairness", "--help"), ("cases", "--help"), ("run", "--help"))
TARGET_S = 0.5


def _script() -> list[str]:
    script = Path(sys.executable).with_name("spanguard")
    return [str(script)] if script.exists() else [sys.executable, "-m", "spanguard_processor"]


def _once(argv: list[str], env: dict[str, str] | None) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one run of ``argv``."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def _env(source: Path | None) -> dict[str, str] | None:
    if source is None:
        return None
    env = dict(os.environ)
    paths = [source / "collector_processor" / "src", source / "sdk" / "src"]
    env["PYTHONPATH"] = os.pathsep.join(str(p.resolve()) for p in paths)
    return env


def measure(rounds: int, baseline: Path | None) -> dict[str, list[tuple[float, float]]]:
    """name -> [(wall, cpu) per round]; every name runs once per round, in turn."""
    jobs: list[tuple[str, list[str], dict[str, str] | None]] = [
        ("python -c pass", [sys.executable, "-c", "pass"], None)
    ]
    for args in COMMANDS:
        jobs.append((f"spanguard {' '.join(args)}", [*_script(), *args], None))
        if baseline is not None:
            jobs.append((f"baseline {' '.join(args)}", [*_script(), *args], _env(baseline)))
    for _, argv, env in jobs:  # warm the page cache and the .pyc files once
        _once(argv, env)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name, _, _ in jobs}
    for _ in range(rounds):
        for name, argv, env in jobs:
            times[name].append(_once(argv, env))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="5 rounds")
    parser.add_argument("--baseline", type=Path, help="another checkout, measured alongside")
    args = parser.parse_args()
    times = measure(5 if args.quick else args.rounds, args.baseline)
    floor = times["python -c pass"]
    floor_wall = statistics.median(w for w, _ in floor)
    floor_cpu = statistics.median(c for _, c in floor)
    print(f"load average {os.getloadavg()[0]:.1f}; medians of {len(floor)} rounds")
    print("| command | wall s | ÷ python -c pass | CPU s | ÷ python -c pass | ≤ 0.5 s |")
    print("|---|---:|---:|---:|---:|---|")
    for name, runs in times.items():
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        met = "—" if name.startswith("python") else ("yes" if wall <= TARGET_S else "no")
        print(
            f"| `{name}` | {wall:.3f} | {wall / floor_wall:.1f}× | {cpu:.3f} | "
            f"{cpu / max(floor_cpu, 1e-3):.1f}× | {met} |"
        )


if __name__ == "__main__":
    main()
