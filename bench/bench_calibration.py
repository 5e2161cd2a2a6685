"""Calibration of the fairness gate: false failures, power, interval coverage, MDE accuracy.

Simulates counterfactual suites (seeds × groups × repeats) of apps with a known true gap and
runs the gate's own statistics on each (``inference.infer_gap`` for the interval and the
threshold test, the within-seed permutation test of variants, the default gate's decision for
one metric at alpha 0.05; the same functions ``evaluate`` calls). Every rate is printed with
its Clopper–Pearson 95% interval beside its target.

Designs (issue #13): fair binary (rate 0.3), fair counts (Poisson, mean 2, threshold 1), random
tool choice (three tools: one indicator column each), random retrieval order (three documents
from groups A, B, C; exposure 1/log2(1 + rank) per document group); 30 seeds × 15 groups and
100 × 6; repeats ×1, identical ×3 and ×5, independent ×3; 20% of variants missing at random;
true gaps (one group's rate raised) 0, 0.05, τ − 0.02, τ, τ + 0.1, 0.3; τ − 0.02 on 1,000 × 6;
0.30 on 100 × 15. MDE accuracy: the median MDE printed on 40 suites of a design, then the
gate's power at that gap on fresh suites.

    .venv/bin/python bench/bench_calibration.py            # all designs, 200 suites each
    .venv/bin/python bench/bench_calibration.py --suites 50 --quick
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.stats import beta

from spanguard_processor.fairness import inference, power
from spanguard_processor.fairness.evaluate import _any_difference
from spanguard_processor.fairness.gate import GateConfig
from spanguard_processor.fairness.groups import missingness_p

ALPHA = 0.05
CFG = GateConfig(bootstrap_samples=2000, permutation_samples=999)
Values = Callable[[np.random.Generator, int, int, int, np.ndarray], np.ndarray]


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    lo = 0.0 if k == 0 else float(beta.ppf(0.025, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(0.975, k + 1, n - k))
    return lo, hi


# --- apps: values (draws, seeds, groups, columns) for given per-group shifts -----------------

def binary(rng: np.random.Generator, draws: int, seeds: int, groups: int,
           shift: np.ndarray) -> np.ndarray:
    rates = 0.3 + shift
    return (rng.random((draws, seeds, groups)) < rates).astype(np.float64)[..., None]


def counts(rng: np.random.Generator, draws: int, seeds: int, groups: int,
           shift: np.ndarray) -> np.ndarray:
    return rng.poisson(2.0 + shift, size=(draws, seeds, groups)).astype(np.float64)[..., None]


def tool_choice(rng: np.random.Generator, draws: int, seeds: int, groups: int,
                shift: np.ndarray) -> np.ndarray:
    pick = rng.integers(0, 3, size=(draws, seeds, groups))
    return np.stack([(pick == t).astype(np.float64) for t in range(3)], axis=-1)


def retrieval_order(rng: np.random.Generator, draws: int, seeds: int, groups: int,
                    shift: np.ndarray) -> np.ndarray:
    order = np.argsort(rng.random((draws, seeds, groups, 3)), axis=-1)  # doc group per rank
    weight = 1.0 / np.log2(2.0 + np.arange(3))
    out = np.zeros((draws, seeds, groups, 3))
    for rank in range(3):
        np.put_along_axis(out, order[..., rank:rank + 1], weight[rank], axis=-1)
    return out


APPS: dict[str, tuple[Values, float]] = {
    "binary": (binary, 0.1), "counts": (counts, 1.0),
    "tool choice": (tool_choice, 0.1), "retrieval order": (retrieval_order, 0.1),
}


@dataclass(frozen=True)
class Design:
    app: str
    seeds: int
    groups: int
    repeats: int = 1
    identical: bool = True
    missing: float = 0.0
    gap: float = 0.0

    @property
    def label(self) -> str:
        rep = ("×1" if self.repeats == 1 else
               f"{'identical' if self.identical else 'independent'} ×{self.repeats}")
        miss = f", {self.missing:.0%} missing" if self.missing else ""
        return f"{self.app}, {self.seeds}×{self.groups}, {rep}{miss}, gap {self.gap:g}"


def simulate(design: Design, rng: np.random.Generator) -> tuple[inference.Units,
                                                               np.ndarray | None]:
    """One suite as variant units (repeats averaged), and the missing indicator if any."""
    values, _ = APPS[design.app]
    shift = np.zeros(design.groups)
    shift[0] = design.gap
    draws = 1 if design.identical else design.repeats
    x = values(rng, draws, design.seeds, design.groups, shift)  # (draws, S, G, C)
    per_record = np.repeat(x, design.repeats // draws, axis=0) if draws == 1 else x
    means = per_record.mean(axis=0).reshape(design.seeds * design.groups, -1)
    seed = np.repeat(np.arange(design.seeds), design.groups)
    group = np.tile(np.arange(design.groups), design.seeds)
    keep = np.ones(seed.shape[0], dtype=bool)
    missing = None
    if design.missing:
        missing = rng.random(seed.shape[0]) < design.missing
        keep = ~missing
    units = inference.Units(means[keep], seed[keep], group[keep],
                            np.full(int(keep.sum()), design.repeats), design.seeds,
                            design.groups)
    return units, (None if missing is None else missing)


@dataclass
class Outcome:
    failed: bool
    covered: bool
    mde: float | None
    missing_flagged: bool


def gate_once(design: Design, rng: np.random.Generator, seed: int, with_mde: bool) -> Outcome:
    _, tau = APPS[design.app]
    units, missing = simulate(design, rng)
    inf = inference.infer_gap(units, tau, ALPHA, seed, draws=CFG.bootstrap_samples)
    assert inf is not None
    failed = False
    if inf.p_threshold < ALPHA:  # the permutation test only matters when this rejects
        p_perm, _ = _any_difference(units, GateConfig(seed=seed))
        failed = max(inf.p_threshold, p_perm) < ALPHA
    lo, hi = inf.interval
    mde = power.min_detectable_effect(inf, tau, ALPHA, seed=seed) if with_mde else None
    flagged = False
    if missing is not None:
        p_miss = missingness_p(np.repeat(np.arange(design.seeds), design.groups),
                               np.tile(np.arange(design.groups), design.seeds), missing,
                               design.seeds, design.groups, 999, seed)
        flagged = p_miss is not None and p_miss < ALPHA
    return Outcome(failed, lo <= design.gap <= hi, mde, flagged)


def run(design: Design, suites: int, seed: int, with_mde: bool = False) -> list[Outcome]:
    rng = np.random.default_rng(seed)
    return [gate_once(design, rng, seed * 100_000 + i, with_mde) for i in range(suites)]


def rate(k: int, n: int) -> str:
    lo, hi = clopper_pearson(k, n)
    return f"{k / n:.3f} [{lo:.3f}, {hi:.3f}] ({k}/{n})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suites", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="only the binary designs")
    parser.add_argument("--boundary-only", action="store_true",
                        help="only the threshold test at the boundary of H0 (Δ = τ)")
    args = parser.parse_args()
    n = args.suites
    if args.boundary_only:
        boundary(n)
        return
    start = time.perf_counter()
    apps = ["binary"] if args.quick else list(APPS)
    print(f"## False failures under the null (target ≤ 0.05, upper bound ≤ 0.07), {n} suites")
    print("| design | false failures [95% CI] | coverage of Δ = 0 |")
    print("|---|---|---|")
    nulls = []
    for app in apps:
        for seeds, groups in ((30, 15), (100, 6)):
            nulls.append(Design(app, seeds, groups))
            nulls.append(Design(app, seeds, groups, repeats=3))
            if app == "binary":
                nulls.append(Design(app, seeds, groups, repeats=5))
                nulls.append(Design(app, seeds, groups, repeats=3, identical=False))
                nulls.append(Design(app, seeds, groups, missing=0.2))
    for i, design in enumerate(nulls):
        out = run(design, n, 1000 + i)
        fails = sum(o.failed for o in out)
        cover = sum(o.covered for o in out)
        print(f"| {design.label} | {rate(fails, n)} | {rate(cover, n)} |", flush=True)
        if design.missing:
            flagged = sum(o.missing_flagged for o in out)
            print(f"| ↳ missingness test flags group dependence | {rate(flagged, n)} | |")
    print()
    print(f"## Threshold, power and coverage (binary, threshold 0.1), {n} suites")
    print("| design | gate fails [95% CI] | coverage of Δ [95% CI] |")
    print("|---|---|---|")
    gaps = [Design("binary", s, g, gap=d) for s, g in ((30, 15), (100, 6))
            for d in (0.05, 0.08, 0.1, 0.2, 0.3)]
    gaps += [Design("binary", 1000, 6, gap=0.08), Design("binary", 100, 15, gap=0.3)]
    for i, design in enumerate(gaps):
        out = run(design, n, 2000 + i)
        print(f"| {design.label} | {rate(sum(o.failed for o in out), n)} | "
              f"{rate(sum(o.covered for o in out), n)} |", flush=True)
    print()
    print("## MDE accuracy (binary; target: power at the printed MDE 0.70–0.90)")
    print("| design | median printed MDE (IQR) | gate fails at that gap [95% CI] |")
    print("|---|---|---|")
    for i, (seeds, groups) in enumerate(((30, 15), (100, 6), (100, 15))):
        printed = [o.mde for o in run(Design("binary", seeds, groups), 40, 3000 + i, True)
                   if o.mde is not None]
        mde = float(np.median(printed))
        q1, q3 = np.quantile(printed, [0.25, 0.75])
        out = run(Design("binary", seeds, groups, gap=mde), n, 3100 + i)
        print(f"| binary, {seeds}×{groups} | {mde:.3f} ({q1:.3f}–{q3:.3f}) | "
              f"{rate(sum(o.failed for o in out), n)} |", flush=True)
    print()
    upper_bound_mode(min(n, 100))
    print()
    boundary(n)
    print()
    normal_approximation(n)
    print()
    print(f"took {time.perf_counter() - start:.0f} s")


def boundary(n: int) -> None:
    """The threshold test (p_threshold < alpha) at Δ = τ exactly, the edge of H0, where a
    level-α test may reject up to α: rates 0.3, raised by τ = 0.1 in one group, in half of the
    groups, and (3 columns) in different groups per column. This checks the least favourable
    configurations the test's critical value is simulated at (one raise per suite, every
    column alike) against configurations it does not simulate."""
    print(f"## The threshold test at the boundary Δ = τ (rates 0.3 + 0.1; target ≈ α), {n} suites")
    print("| seeds × groups | raised | threshold test rejects [95% CI] |")
    print("|---|---|---|")

    def one(r: np.ndarray) -> None:
        r[0, 0] += 0.1

    def half(r: np.ndarray) -> None:
        r[: r.shape[0] // 2, :] += 0.1

    def mixed(r: np.ndarray) -> None:
        r[0, 0] += 0.1
        r[1:8, 1] += 0.1
        r[3, 2] += 0.1

    cases = [("one group", 1, one), ("half the groups", 1, half),
             ("3 columns: one group", 3, one), ("3 columns: half, every column", 3, half),
             ("3 columns: a different raise per column", 3, mixed)]
    for i, (seeds, groups) in enumerate(((30, 15), (100, 6), (100, 15))):
        for j, (label, cols, raise_) in enumerate(cases):
            rng = np.random.default_rng(6000 + 10 * i + j)
            hits = 0
            for b in range(n):
                rates = np.full((groups, cols), 0.3)
                raise_(rates)
                x = (rng.random((seeds, groups, cols)) < rates).astype(np.float64)
                units = inference.Units(x.reshape(seeds * groups, cols),
                                        np.repeat(np.arange(seeds), groups),
                                        np.tile(np.arange(groups), seeds),
                                        np.ones(seeds * groups, dtype=np.int64), seeds, groups)
                inf = inference.infer_gap(units, 0.1, ALPHA, b, draws=CFG.bootstrap_samples)
                assert inf is not None
                hits += inf.p_threshold < ALPHA
            print(f"| {seeds}×{groups} | {label} | {rate(hits, n)} |", flush=True)


def upper_bound_mode(n: int) -> None:
    """How often `--gate upper-bound` passes a fair app (it must show the gap is under 0.1)."""
    print("## upper-bound mode on a fair binary app (rate 0.3, threshold 0.1)")
    print("| seeds × groups | passes [95% CI] |")
    print("|---|---|")
    for i, (seeds, groups) in enumerate(((100, 6), (1000, 6), (2000, 6), (1000, 2))):
        rng = np.random.default_rng(5000 + i)
        ok = 0
        for b in range(n):
            units, _ = simulate(Design("binary", seeds, groups), rng)
            inf = inference.infer_gap(units, 0.1, ALPHA, b, draws=CFG.bootstrap_samples)
            assert inf is not None
            ok += inf.interval[1] <= 0.1
        print(f"| {seeds}×{groups} | {rate(ok, n)} |", flush=True)


def normal_approximation(n: int) -> None:
    """Null rejection rate at alpha 0.05 of the "any difference" p-value: Monte Carlo
    permutation vs its normal approximation, on small and large suites of a rare binary
    outcome (rate 0.1), where the approximation is worst."""
    from spanguard_processor.fairness import permutation, stats

    print("## The normal approximation of the permutation test (rate 0.1, null, alpha 0.05)")
    print("| seeds × groups | permutation rejects [95% CI] | normal approximation rejects |")
    print("|---|---|---|")
    for i, (seeds, groups) in enumerate(((10, 2), (30, 2), (30, 6), (200, 2), (200, 6))):
        rng = np.random.default_rng(4000 + i)
        perm = approx = 0
        for b in range(n):
            x = (rng.random((seeds * groups, 1)) < 0.1).astype(np.float64)
            design = stats.build_design(np.repeat(np.arange(seeds), groups),
                                        np.tile(np.arange(groups), seeds), seeds, groups)
            sums, cnt = stats.seed_aggregates(design, x)
            gap = stats.gap_estimate(sums, cnt).gap
            perm += permutation.permutation_p(design, x, gap, 999, b) < ALPHA
            cov, n_g = permutation.permutation_covariance(design, x)
            approx += permutation.normal_permutation_p(cov, n_g, 1, gap, 20_000, b) < ALPHA
        print(f"| {seeds}×{groups} | {rate(perm, n)} | {rate(approx, n)} |", flush=True)


if __name__ == "__main__":
    main()
