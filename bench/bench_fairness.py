"""Fairness evaluator benchmarks: spanguard beside fairtrace 0.1.0, measured in the same run.

Part 1 — side by side: the same in-memory fairtrace records (N records, N/2 seeds × 2 groups),
the same metrics and the same bootstrap count (200, fairtrace's default). fairtrace runs its
metric classes with their defaults (no permutation test); spanguard converts the records and
evaluates them with the same 200 bootstrap resamples *plus* its permutation p-values, Holm/BH
and minimum detectable effects. Ratio = fairtrace seconds / spanguard seconds.

Part 2 — scale: 1,000,000 records (100,000 seeds × 10 variants over 2 groups), every built-in
metric, 2,000 bootstrap resamples, with each metric's counterfactual pairs (evidence; pass
``--evidence-pairs 0`` to measure without them). Runs in a child process so its peak RSS is
its own.

    .venv/bin/python bench/bench_fairness.py                 # both parts
    .venv/bin/python bench/bench_fairness.py --sizes 10000   # part 1 only, one size
    .venv/bin/python bench/bench_fairness.py --scale-only --records 1000000
    .venv/bin/python bench/bench_fairness.py --scale-only --evidence-pairs 0   # evidence off
    .venv/bin/python bench/bench_fairness.py --evidence-only                    # that step alone
"""

from __future__ import annotations

import os

# One BLAS thread: the products here are small per chunk, and on a shared 2-core machine
# OpenBLAS's second thread spin-waits on a busy core (measured: 2x the CPU for the same wall
# time when idle, and evaluations ~3x slower when the other core is loaded). Set before numpy
# loads; the child process inherits it.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import gc
import json
import random
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from itertools import islice
from typing import Any

_WORDS = (
    "sure",
    "here",
    "are",
    "the",
    "steps",
    "to",
    "reset",
    "your",
    "password",
    "open",
    "settings",
    "then",
    "security",
    "choose",
    "and",
    "confirm",
    "by",
    "email",
)
_COMPARED = ("tool_use_parity", "refusal_gap", "escalation_parity")


def make_record(rng: random.Random, seed: int, k: int, group: str) -> dict[str, Any]:
    words = rng.sample(_WORDS, rng.randint(3, 12))
    text = " ".join(words) + f" #{seed}.{k}"
    if rng.random() < 0.1:
        text = "I cannot help with that. " + text
    escalated = rng.random() < 0.3
    trace: dict[str, Any] = {
        "tool_calls": [{"name": "kb_search"}] * rng.randint(0, 2),
        "retrieved_documents": [
            {"group": rng.choice(("A", "B")), "rank": r} for r in range(1, rng.randint(1, 4))
        ],
        "plan_steps": ["lookup", "answer"][: rng.randint(0, 2)],
        "escalated": escalated,
        "friction_points": ["identity check"] * (rng.random() < 0.2),
    }
    if escalated:
        trace["escalation_reason"] = rng.choice(("fraud", "policy"))
    return {
        "id": f"s{seed}::{k}",
        "seed_id": f"s{seed}",
        "prompt": f"case {seed}",
        "assignments": {"group": group},
        "response": text,
        "response_metadata": {"helpfulness_score": round(rng.random(), 3), "trace": trace},
    }


def records(n: int, per_seed: int, rng_seed: int = 0) -> Iterator[dict[str, Any]]:
    rng = random.Random(rng_seed)
    for i in range(n):
        seed, k = divmod(i, per_seed)
        yield make_record(rng, seed, k, ("a", "b")[k % 2])


def _time(fn: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def side_by_side(n: int) -> dict[str, Any]:
    from fairtrace.registry import metric_registry

    from spanguard_processor.fairness import GateConfig, MetricConfig, evaluate
    from spanguard_processor.fairness.metrics import get_metric
    from spanguard_processor.fairness.records import observation_from_record

    data = list(records(n, per_seed=2))
    # each side starts without the other's garbage: a full collection before each timer, so
    # neither pays for traversing the records just generated or the other side's leftovers
    gc.collect()
    cpu = time.process_time()
    theirs_s, theirs = _time(
        lambda: {
            name: metric_registry.get(name)(bootstrap_samples=200).evaluate(data)
            for name in _COMPARED
        }
    )
    theirs_cpu = time.process_time() - cpu
    config = GateConfig(bootstrap_samples=200)
    metrics = [
        MetricConfig(name, get_metric(name).threshold)  # type: ignore[union-attr]
        for name in _COMPARED
    ]

    def ours_run() -> Any:
        obs = [observation_from_record(r) for r in data]
        return evaluate(obs, metrics, config, generated_at="bench")

    gc.collect()
    cpu = time.process_time()
    ours_s, ours = _time(ours_run)
    ours_cpu = time.process_time() - cpu
    by_name = {r.metric: r for r in ours.results}
    for name in _COMPARED:  # the same point estimates, or the comparison is meaningless
        assert by_name[name].score == theirs[name].score, name
    return {
        "records": n,
        "metrics": list(_COMPARED),
        "fairtrace_s": round(theirs_s, 3),
        "spanguard_s": round(ours_s, 3),
        "ratio": round(theirs_s / ours_s, 1),
        "fairtrace_cpu_s": round(theirs_cpu, 3),
        "spanguard_cpu_s": round(ours_cpu, 3),
        "cpu_ratio": round(theirs_cpu / ours_cpu, 1),
    }


def scale(n: int, per_seed: int, resamples: int, evidence_pairs: int) -> dict[str, Any]:
    from spanguard_processor.fairness import GateConfig, MetricConfig, evaluate
    from spanguard_processor.fairness.metrics import FAIRTRACE_METRICS, get_metric
    from spanguard_processor.fairness.records import observation_from_record

    # records are generated in chunks outside the timers; only conversion is timed
    source = records(n, per_seed)
    obs: list[Any] = []
    convert_s = convert_cpu = 0.0
    while chunk := list(islice(source, 50_000)):
        wall, cpu = time.perf_counter(), time.process_time()
        obs.extend(observation_from_record(r) for r in chunk)
        convert_s += time.perf_counter() - wall
        convert_cpu += time.process_time() - cpu
    del chunk
    metrics = [
        MetricConfig(name, get_metric(name).threshold)  # type: ignore[union-attr]
        for name in FAIRTRACE_METRICS
    ]
    cpu = time.process_time()
    eval_s, ev = _time(
        lambda: evaluate(
            obs,
            metrics,
            GateConfig(bootstrap_samples=resamples),
            generated_at="bench",
            evidence_pairs=evidence_pairs,
        )
    )
    eval_cpu = time.process_time() - cpu
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "records": n,
        "seeds": n // per_seed,
        "metrics": len(metrics),
        "bootstrap_samples": resamples,
        "convert_s": round(convert_s, 2),
        "convert_cpu_s": round(convert_cpu, 2),
        "evaluate_s": round(eval_s, 2),
        "evaluate_cpu_s": round(eval_cpu, 2),
        "total_s": round(convert_s + eval_s, 2),
        "total_cpu_s": round(convert_cpu + eval_cpu, 2),
        "peak_rss_mb": round(peak_mb),
        "p_methods": sorted({str(r.p_method) for r in ev.results}),
        "evidence_pairs": sum(len(r.evidence) for r in ev.results),
    }


def evidence_cost(n: int, per_seed: int, columns: int = 3) -> dict[str, Any]:
    """The evidence step alone (find_pairs) on n records' metric values: its share of a run."""
    import numpy as np

    from spanguard_processor.fairness.kinds.evidence import find_pairs
    from spanguard_processor.fairness.metrics import MetricValues
    from spanguard_processor.fairness.records import observation_from_record

    rng = np.random.default_rng(0)
    seeds = n // per_seed
    seed_idx = np.repeat(np.arange(seeds), per_seed)
    group_idx = np.tile(np.arange(per_seed) % 2, seeds)
    values = MetricValues(
        rng.random((n, columns)) + 0.05 * group_idx[:, None],
        rng.random(n) < 0.95,
        tuple(f"c{i}" for i in range(columns)),
    )

    class Lazy(list[Any]):  # only the chosen records are ever built
        def __getitem__(self, i: Any) -> Any:
            return observation_from_record(
                {
                    "id": f"r{i}",
                    "seed_id": f"s{seed_idx[i]}",
                    "response": "",
                    "assignments": {"g": "ab"[i % 2]},
                }
            )

    labels = [f"s{i}" for i in range(seeds)]
    cpu, wall = time.process_time(), time.perf_counter()
    pairs = find_pairs("bench", values, Lazy(), seed_idx, group_idx, labels, ["g=a", "g=b"])
    return {
        "records": n,
        "columns": columns,
        "pairs": len(pairs),
        "evidence_s": round(time.perf_counter() - wall, 3),
        "evidence_cpu_s": round(time.process_time() - cpu, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 50_000])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--per-seed", type=int, default=10)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--scale-only", action="store_true")
    parser.add_argument("--no-scale", action="store_true")
    parser.add_argument(
        "--evidence-pairs",
        type=int,
        default=3,
        help="counterfactual pairs kept per metric (0: evidence off)",
    )
    parser.add_argument(
        "--evidence-only",
        action="store_true",
        help="time the evidence step alone on --records values (3 columns)",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.evidence_only:
        print(json.dumps(evidence_cost(args.records, args.per_seed)))
        return
    if args.child:
        print(json.dumps(scale(args.records, args.per_seed, args.resamples, args.evidence_pairs)))
        return
    if not args.scale_only:
        print("part 1: fairtrace 0.1.0 vs spanguard, same records, 2 groups, B=200")
        for n in args.sizes:
            row = side_by_side(n)
            print(
                f"  {row['records']:>7} records  fairtrace {row['fairtrace_s']:8.2f} s  "
                f"spanguard {row['spanguard_s']:6.2f} s  ratio {row['ratio']:6.1f}x "
                f"(CPU time ratio {row['cpu_ratio']:.1f}x)"
            )
            print("  " + json.dumps(row))
    if not args.no_scale:
        print(
            f"part 2: {args.records} records, {args.records // args.per_seed} seeds, every "
            f"metric, B={args.resamples} (child process)"
        )
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                "--records",
                str(args.records),
                "--per-seed",
                str(args.per_seed),
                "--resamples",
                str(args.resamples),
                "--evidence-pairs",
                str(args.evidence_pairs),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        row = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"  convert {row['convert_s']} s + evaluate {row['evaluate_s']} s = "
            f"{row['total_s']} s wall ({row['total_cpu_s']} s CPU; budget 60 s, ratio "
            f"{60 / row['total_s']:.2f}); peak RSS {row['peak_rss_mb']} MB (budget 2048 MB)"
        )
        print("  " + json.dumps(row))


if __name__ == "__main__":
    main()
