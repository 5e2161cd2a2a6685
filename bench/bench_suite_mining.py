"""Suite mining (`spanguard suite mine`) beside case mining (`cases build`) on the same traces.

Synthetic production traffic as agent traces (the processor's JSONL output): 60 % of the
requests come from 40 hidden templates with gender, age or religion mentions (Zipf-weighted,
numbers changing per request, so nearly every text is distinct), 40 % mention nothing. Each
tool runs in its own child process on the same file, which reports its wall time, CPU time
(the figure that survives a loaded machine) and peak RSS; the ratio is case mining's CPU time
over suite mining's, same run. Peak RSS at 20k beside 100k
shows whether mining memory grows with the traffic (it should not: one entry per template).
Every request names its user (one of ``count / 20``), so the floor counts people; ``--twice``
mines the file and a copy of it (every trace read twice: each must count once).

``--bloom`` measures the false-positive rate of the trace-id filter (``mining/seen.py``): N
distinct ids added, then N other ids asked; the rate with its 95 % Wilson interval beside the
design bound (5e-5) and the target (< 1e-4), and the filter's memory.

    .venv/bin/python bench/bench_suite_mining.py                       # 20k and 100k
    .venv/bin/python bench/bench_suite_mining.py --sizes 1000000 --mine-only
    .venv/bin/python bench/bench_suite_mining.py --sizes 100000 --mine-only --twice
    .venv/bin/python bench/bench_suite_mining.py --bloom 1000000
    .venv/bin/python bench/bench_suite_mining.py --quick               # 5k, and --bloom 100000
"""

from __future__ import annotations

import argparse
import json
import math
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GENDER = [
    ("she", "he"),
    ("her", "his"),
    ("wife", "husband"),
    ("woman", "man"),
    ("mother", "father"),
    ("daughter", "son"),
    ("Ms", "Mr"),
]
PREFIXES = [
    "My {2} wants to know whether {0} can",
    "Can {0} still",
    "I am a {3} and I would like to",
    "My {4} is asking if {0} is allowed to",
    "Our {5} needs help; can {0}",
    "{6} Lee would like to know how {0} can",
]
VERBS = ["refinance", "open", "close", "dispute", "upgrade", "transfer", "cancel", "renew"]
OBJECTS = [
    "the mortgage on the house",
    "a joint savings account",
    "the travel card",
    "a late fee from March",
    "the car loan",
    "the student loan",
    "the business account",
    "the retirement plan",
]
OTHER = [
    "I am a {v}-year-old customer and want to know about pension top-ups",
    "As a {v} customer, is there a savings product without interest?",
]
FREE = [
    "What are your opening hours on {n} December?",
    "What is the interest rate on the {n}-month certificate of deposit?",
    "Why does the app log me out after {n} minutes?",
    "Where can I download the statement for account {n}?",
    "How long does an international wire take to arrive?",
]


def _templates() -> list[str]:
    out = []
    for i in range(38):
        verb, obj = VERBS[i % len(VERBS)], OBJECTS[(i * 3 + i // 8) % len(OBJECTS)]
        out.append(f"{PREFIXES[i % len(PREFIXES)]} {verb} {obj} for {{n}} dollars?")
    return out


def write_traffic(path: Path, count: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    users = max(50, count // 20)
    templates = _templates()
    weights = [1.0 / (1 + i) for i in range(len(templates) + len(OTHER))]
    with path.open("w", encoding="utf-8") as out:
        for i in range(count):
            n = rng.randint(2, 90000)
            if rng.random() < 0.4:
                text = rng.choice(FREE).format(n=n)
            else:
                k = rng.choices(range(len(weights)), weights)[0]
                if k < len(templates):
                    side = rng.randrange(2)
                    text = templates[k].format(*(pair[side] for pair in GENDER), n=n)
                    text = text[:1].upper() + text[1:]
                elif k == len(templates):
                    text = OTHER[0].format(v=rng.randint(20, 85))
                else:
                    text = OTHER[1].format(v=rng.choice(["Muslim", "Christian", "Jewish"]))
            escalated = rng.random() < 0.05
            row = {
                "trace_id": f"{i:032x}",
                "user_id": f"user-{rng.randrange(users)}",
                "input": text,
                "output": "Here is how.",
                "latency_ms": round(rng.uniform(200, 900), 1),
                "trace": {
                    "tool_calls": [{"name": "core_banking"}],
                    "escalated": escalated,
                    "escalation_reason": "review" if escalated else None,
                },
            }
            out.write(json.dumps(row) + "\n")


def _child(tool: str, log: str, out: str) -> None:
    start = time.perf_counter()
    summary: dict[str, object] = {}
    if tool in ("mine", "mine-twice"):
        from spanguard_processor.mining.run import MineRequest, run_mining

        paths = (Path(log),)
        if tool == "mine-twice":  # the same traces under another name: read twice, count once
            copy = Path(out).with_suffix(".copy.jsonl")
            shutil.copyfile(log, copy)
            paths += (copy,)
        result = run_mining(MineRequest(paths=paths), Path(out))
        summary = {
            "seeds": len(result.seeds),
            "templates": result.templates,
            "covered": round(result.covered_share, 4),
            "traces": result.traces,
            "duplicates": result.duplicates,
        }
    else:
        from spanguard_processor.regression.mine.build import BuildOptions, build_evalset

        built = build_evalset([Path(log)], BuildOptions(out=Path(out)))
        summary = {"cases": len(built.cases)}
    elapsed = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime
    print(
        json.dumps(
            {"seconds": elapsed, "cpu": cpu, "peak_rss_mb": usage.ru_maxrss / 1024, **summary}
        )
    )


def _measure(tool: str, log: Path, out: Path) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--child", tool, str(log), str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _wilson(hits: int, n: int) -> tuple[float, float]:
    z = 1.959963984540054
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def bloom(count: int) -> None:
    """False positives of the trace-id filter: ``count`` ids in, then ``count`` other ids
    asked (not added: the filter as it stands after ``count`` traces)."""
    from spanguard_processor.mining.seen import FIRST_RATE, SeenIds

    seen, batch = SeenIds(), 1024
    start, cpu = time.perf_counter(), time.process_time()
    for i in range(0, count, batch):
        seen.seen([f"{j:032x}" for j in range(i, min(i + batch, count))])
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    hits = 0
    for i in range(count, 2 * count, batch):
        hits += sum(seen.contains([f"q{j:031x}" for j in range(i, min(i + batch, 2 * count))]))
    lo, hi = _wilson(hits, count)
    print(
        f"bloom: {count} ids in {elapsed:.1f} s wall, {cpu:.1f} s CPU "
        f"({cpu / count * 1e6:.1f} µs/id), {seen.bytes / 1e6:.2f} MB in "
        f"{len(seen.stages)} stage(s); false positives {hits}/{count} = {hits / count:.2e} "
        f"[{lo:.2e}, {hi:.2e}] (design bound {2 * FIRST_RATE:.0e}, target < 1e-04)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="20000,100000")
    parser.add_argument("--mine-only", action="store_true")
    parser.add_argument("--twice", action="store_true", help="mine the file and a copy of it")
    parser.add_argument("--bloom", type=int, default=0, metavar="N")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--child", nargs=3, metavar=("TOOL", "LOG", "OUT"))
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return
    if args.quick:
        args.sizes, args.bloom = "5000", 100000
    if args.bloom:
        bloom(args.bloom)
        if not args.quick:
            return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        print(
            "traces   mine wall s (CPU s)  RSS MB  seeds  covered   "
            "cases build wall s (CPU s)  RSS MB  CPU ratio"
        )
        for size in (int(s) for s in args.sizes.split(",")):
            log = folder / f"traffic-{size}.jsonl"
            write_traffic(log, size)
            tool = "mine-twice" if args.twice else "mine"
            mined = _measure(tool, log, folder / f"mined-{size}.yaml")
            line = (
                f"{size:>7}  {mined['seconds']:8.2f} ({mined['cpu']:6.2f})  "
                f"{mined['peak_rss_mb']:7.1f}  {mined['seeds']:>5}  {mined['covered']:7.1%}"
            )
            if args.twice:
                line += f"  read {mined['traces']} + {mined['duplicates']} duplicates"
            if not args.mine_only:
                cases = _measure("cases", log, folder / f"cases-{size}")
                line += (
                    f"   {cases['seconds']:15.2f} ({cases['cpu']:6.2f})  "
                    f"{cases['peak_rss_mb']:7.1f}  {cases['cpu'] / mined['cpu']:5.2f}×"
                )
            print(line, flush=True)


if __name__ == "__main__":
    main()
