"""The regression gate's calibration: false FAIL / PASS / INCONCLUSIVE rates and power.

Default (the repeats gate, docs/regression.md "What a regression PASS means"): a simulated loan
agent (8 templates × 3 outcome paths = 24 cases in contract C1's shape, written by hand here)
with random escalations (2–10 %), tool retries (3 %), paraphrased answers and lognormal latency
jitter, and a baseline measured under a different machine load (a multiplicative latency
factor). Each trial runs the baseline and a candidate K times per case, in-process, either as a
replay (``score_repeats``) or as recorded traffic (outputs lines matched to cases by question,
each case holding as many requests as production sent it), and gates them with ``check``'s
rules. Designs: unchanged agents, and real changes (a dropped tool call on one path, a refusal on
one question, a declined outcome on one slot range, 1.5× latency, +1 tool call). Rates come with
Clopper–Pearson 95 % intervals.

    nice -n 10 .venv/bin/python bench/bench_regression_gate.py --trials 100
    nice -n 10 .venv/bin/python bench/bench_regression_gate.py --quick
    nice -n 10 .venv/bin/python bench/bench_regression_gate.py --coverage --trials 100

``--coverage`` measures the rate bound itself (bench/_regression_coverage.py): how often its
one-sided 95 % bounds cover a known weighted D, and how often the metric PASSes at D = τ.

``--legacy`` runs the earlier benchmark of trace2eval's rules (cases built from templated traffic
by ``cases build``, one record per case; peer: trace2eval-cli 0.5.1's ``check``):

    .venv/bin/python bench/bench_regression_gate.py --legacy --trials 100
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._regression_sim import wilson  # noqa: E402
from spanguard_processor.regression.gate.gate import compare  # noqa: E402
from spanguard_processor.regression.gate.runfile import load_run  # noqa: E402
from spanguard_processor.regression.mine.build import BuildOptions, build_evalset  # noqa: E402
from spanguard_processor.regression.run.outputs import outputs_from_traces  # noqa: E402
from spanguard_processor.regression.run.run import load_cases, run_cases  # noqa: E402
from tests.regression.loan_agent import Application, applications, serve  # noqa: E402

CONDITIONS = (None, "drop_offer_tool", "escalate_self_employed", "slower")


def _run(folder: Path, name: str, traces: list[dict[str, object]], cases: list) -> Path:
    log = folder / f"{name}.jsonl"
    log.write_text("".join(json.dumps(t) + "\n" for t in traces), encoding="utf-8")
    out = folder / f"{name}.json"
    out.write_text(run_cases(cases, outputs_from_traces([log])).to_json(), encoding="utf-8")
    return out


def _trace2eval_fails(base: Path, cur: Path) -> bool:
    from trace2eval.runner import RunMetrics, compare_runs

    metrics = [RunMetrics.from_dict(json.loads(p.read_text())["metrics"]) for p in (base, cur)]
    return bool(compare_runs(*metrics))


def _fresh_ids(apps: list[Application], rng: random.Random) -> list[Application]:
    """New random request ids, as an app that draws a uuid per request has."""
    return [replace(a, request_id=f"{rng.getrandbits(64):016x}") for a in apps]


def trial(folder: Path, number: int) -> dict[str, tuple[bool, bool]]:
    rng = random.Random(number)
    apps = applications(72, seed=number)
    traffic = serve(_fresh_ids(apps, rng), jitter_seed=1000 + number)
    log = folder / "traffic.jsonl"
    log.write_text("".join(json.dumps(t) + "\n" for t in traffic), encoding="utf-8")
    build_evalset([log], BuildOptions(out=folder / "ev"))
    cases = load_cases(folder / "ev" / "cases.jsonl")
    base = _run(folder, "baseline", traffic, cases)
    verdicts = {}
    for change in CONDITIONS:
        name = change or "unchanged"
        current = serve(_fresh_ids(apps, rng), jitter_seed=2000 + number, change=change)
        cur = _run(folder, name, current, cases)
        ours = bool(compare(load_run(base), load_run(cur)).violations)
        verdicts[name] = (ours, _trace2eval_fails(base, cur))
    return verdicts


def legacy(trials: int) -> None:
    args = argparse.Namespace(trials=trials)
    started = time.perf_counter()
    counts = {c or "unchanged": [0, 0] for c in CONDITIONS}
    with tempfile.TemporaryDirectory() as tmp:
        for number in range(args.trials):
            folder = Path(tmp) / f"t{number}"
            folder.mkdir()
            for name, (ours, theirs) in trial(folder, number).items():
                counts[name][0] += ours
                counts[name][1] += theirs
    n = args.trials
    print(f"{n} trials, {time.perf_counter() - started:.1f} s")
    print("| agent run | spanguard check fails | trace2eval 0.5.1 check fails |")
    print("| --- | --- | --- |")
    for name, (ours, theirs) in counts.items():
        lo, hi = wilson(ours, n)
        lo2, hi2 = wilson(theirs, n)
        print(f"| {name} | {ours}/{n} [{lo:.2f}, {hi:.2f}] | {theirs}/{n} [{lo2:.2f}, {hi2:.2f}] |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--quick", action="store_true", help="20 trials, replay only")
    parser.add_argument("--legacy", action="store_true", help="trace2eval's rules (old bench)")
    parser.add_argument("--repeats", type=int, default=None, help="K per case (default: plan's)")
    parser.add_argument("--mode", choices=("replay", "recorded", "both"), default="both")
    parser.add_argument(
        "--coverage", action="store_true", help="the rate bound's coverage of a known D"
    )
    args = parser.parse_args()
    if args.legacy:
        legacy(args.trials)
        return
    modes = ("replay", "recorded") if args.mode == "both" else (args.mode,)
    if args.coverage:
        from bench._regression_coverage import coverage

        coverage(20 if args.quick else args.trials, modes, args.repeats or 16)
        return
    from bench._regression_sim import calibrate

    calibrate(
        20 if args.quick else args.trials,
        ("replay",)
        if args.quick
        else (("replay", "recorded") if args.mode == "both" else (args.mode,)),
        args.repeats,
    )


if __name__ == "__main__":
    main()
