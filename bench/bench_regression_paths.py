"""How `cases build` splits questions into outcome paths, on stochastic templated agents.

Each trial serves templated loan applications (``tests/regression/stochastic_loan.py``) and
builds cases from the traffic. Designs:

- ``random-escalation p``: an agent that approves or declines by the numbers and escalates a
  share ``p`` of requests at random (plus 3 % tool retries). A *false split* is a case of its
  own for a random path: a case asserting ``escalated: true``, or whose representative took a
  random path (so replaying its input does not reproduce it). Target: 0, ≤ 0.05 per trial.
- ``outcomes``: 64 applications, three outcomes (approve / decline / escalate by amount over
  income) and two tool paths (income ≥ 100,000 adds ``verify_income``); approve and decline share
  a process. *Covered*: every (template, outcome, tool path) occurring ≥ 3 times has a case
  whose representative took it. Target: ≥ 8 cases, every such path covered. The detail also
  counts the paths seen ≥ 3 times inside one question cluster (the split rule's own domain).
- ``outcomes + noise``: the same with 4 % random escalations and 3 % retries.

Rates come with 95 % Wilson intervals; the false-split rates also with their exact
(Clopper–Pearson) 95 % interval, whose upper end is the one the ≤ 0.05 target is read against.

    nice -n 10 .venv/bin/python bench/bench_regression_paths.py --trials 100
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._regression_sim import cp_interval, wilson  # noqa: E402
from spanguard_processor.regression.mine.build import BuildOptions, build_evalset  # noqa: E402
from spanguard_processor.regression.mine.loader import load_logs  # noqa: E402
from spanguard_processor.regression.mine.select import cluster_log  # noqa: E402
from tests.regression.loan_agent import applications  # noqa: E402
from tests.regression.stochastic_loan import decide, serve, tool_path  # noqa: E402


def _build(traces: list[dict[str, object]], folder: Path) -> list[dict[str, object]]:
    log = folder / "traffic.jsonl"
    log.write_text("".join(json.dumps(t) + "\n" for t in traces), encoding="utf-8")
    build_evalset([log], BuildOptions(out=folder / "ev"))
    text = (folder / "ev" / "cases.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def random_trial(trial: int, rate: float, count: int, folder: Path) -> tuple[bool, int]:
    """(a false split?, random escalations served) for one trial."""
    apps = applications(count, seed=trial)
    traces, outcomes = serve(apps, 10_000 + trial, rate, 0.03, refer=False)
    by_prompt = {a.prompt: a for a in apps}
    false_split = False
    for case in _build(traces, folder):
        rep = by_prompt[str(case["input"])]
        asserted = case.get("trace_checks", [])
        random_path = outcomes[rep.request_id] != decide(rep, refer=False)
        escalation = {"type": "escalated", "value": True} in asserted  # type: ignore[operator]
        false_split = false_split or random_path or escalation
    return false_split, sum(1 for v in outcomes.values() if v == "escalate")


def _within_one_question(log: Path, path: dict[str, tuple[int, str, str]]) -> set[object]:
    """The paths seen ≥ 3 times inside one question cluster (a template whose wording varies
    beyond the dedup threshold is two questions, and a path can be spread 2 + 1 over them)."""
    rows = load_logs([log], 10**7).rows
    selection = cluster_log(rows, 0.6)
    found: set[object] = set()
    for family in {tuple(selection.family(c)) for c in selection.clusters}:
        counts = Counter(path[rows[m].input] for m in family)
        found |= {p for p, n in counts.items() if n >= 3}
    return found


def outcome_trial(trial: int, noise: bool, folder: Path) -> tuple[bool, int, int, int, int, int]:
    """(every path ≥ 3 covered?, paths ≥ 3, of which covered, cases, paths ≥ 3 inside one
    question cluster, of which covered) for one trial."""
    apps = applications(64, seed=trial)
    traces, outcomes = serve(apps, 20_000 + trial, 0.04 if noise else 0.0, 0.03 if noise else 0.0)
    path = {a.prompt: (a.template, decide(a), tool_path(a)) for a in apps}
    frequent = {p for p, n in Counter(path.values()).items() if n >= 3}
    cases = _build(traces, folder)
    by_prompt = {a.prompt: a for a in apps}
    covered = {
        path[str(c["input"])]
        for c in cases
        if outcomes[by_prompt[str(c["input"])].request_id] == decide(by_prompt[str(c["input"])])
    }
    inside = _within_one_question(folder / "traffic.jsonl", path)
    return (
        frequent <= covered,
        len(frequent),
        len(frequent & covered),
        len(cases),
        len(inside),
        len(inside & covered),
    )


def _line(name: str, k: int, n: int, target: str, extra: str = "") -> str:
    lo, hi = wilson(k, n)
    return f"| {name} | {k}/{n} = {k / n:.3f} [{lo:.3f}, {hi:.3f}] | {target} | {extra} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--quick", action="store_true", help="20 trials per design")
    parser.add_argument("--requests", type=int, default=240, help="per random-escalation trial")
    args = parser.parse_args()
    trials = 20 if args.quick else args.trials
    print("| design | rate [95 % Wilson] | target | detail |")
    print("| --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for rate in (0.02, 0.04, 0.10):
            results = [random_trial(t, rate, args.requests, folder) for t in range(trials)]
            k = sum(1 for r in results if r[0])
            served = sum(r[1] for r in results) / trials
            lo, hi = cp_interval(k, trials)
            print(
                _line(
                    f"random escalation {rate:.0%}, {args.requests} requests: false split",
                    k,
                    trials,
                    "≤ 0.05",
                    f"Clopper–Pearson [{lo:.3f}, {hi:.3f}]; "
                    f"{served:.1f} random escalations per trial",
                )
            )
        for noise in (False, True):
            out = [outcome_trial(t, noise, folder) for t in range(trials)]
            k = sum(1 for r in out if r[0])
            paths, covered = sum(r[1] for r in out), sum(r[2] for r in out)
            cases = [r[3] for r in out]
            inside, inside_covered = sum(r[4] for r in out), sum(r[5] for r in out)
            name = "64 outcomes" + (" + 4 % escalation, 3 % retry" if noise else "")
            print(
                _line(
                    f"{name}: every path ≥ 3 covered",
                    k,
                    trials,
                    "≥ 0.95",
                    f"paths covered {covered}/{paths}, of those inside one question cluster "
                    f"{inside_covered}/{inside}; cases min {min(cases)}, "
                    f"mean {sum(cases) / len(cases):.1f}",
                )
            )


if __name__ == "__main__":
    main()
