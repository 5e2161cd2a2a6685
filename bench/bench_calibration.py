"""Calibration of the fairness gate's four outcomes: FAIL, INCONCLUSIVE and PASS rates, and
the coverage of the upper bound PASS relies on.

Simulates counterfactual suites (seeds × groups × repeats) of apps with a known true gap Δ and
runs the gate's own statistics on each — ``inference.infer_gap`` (the studentized interval and
the threshold test), the within-seed permutation test of variants, and
``precision.precision`` (the upper bound: the smaller of the studentized and the exact
discordance bound; the MDE) — the same functions ``evaluate`` calls, decided by the default
gate's own ``apply_gate`` for one metric at alpha 0.05 (coverage checks aside, as with
``--allow-partial``): FAIL when both tests reject gap ≤ τ, else PASS when the upper bound is
below τ (and at least 2 seeds hold two groups), else INCONCLUSIVE. Issue 47's designs
(``--counts-only``): deterministic count apps whose bias lives in a minority of templates,
with and without the suite's stated ``max_difference``. Every rate is printed with its
Clopper–Pearson 95% interval.

Apps: fair binary (rate 0.3, τ 0.1), fair counts (Poisson, mean 2, τ 1), random tool choice
(three tools: one indicator column each), random retrieval order (three documents from groups
A, B, C; exposure 1/log2(1 + rank)), and a **deterministic** binary app (each seed's answer
decided by its template alone, every group and repeat alike; a planted gap δ flips group 0 to
1 in a share of seeds). Designs: 30 seeds × 15 groups and 100 × 6; repeats ×1, identical ×3 and
×5, independent ×3; 20% of variants missing at random; noisy designs large enough for the
design MDE (``design.design_mde``, worst-case variance) to be at most τ/2; deterministic designs
from 1 × 2 to 100 × 15; true gaps 0, 0.05, τ − 0.02, τ, τ + 0.1, 0.3.

    .venv/bin/python bench/bench_calibration.py            # the three tables, 200 suites each
    .venv/bin/python bench/bench_calibration.py --all      # and the FAIL test's own checks
    .venv/bin/python bench/bench_calibration.py --quick    # binary and deterministic only
    .venv/bin/python bench/bench_calibration.py --quick --suites 20    # under a minute
    .venv/bin/python bench/bench_calibration.py --advice      # re-run at the printed seeds_needed
    .venv/bin/python bench/bench_calibration.py --attributes  # several protected attributes
    .venv/bin/python bench/bench_calibration.py --counts-only          # issue 47's designs

``--all`` adds the threshold test at the boundary Δ = τ on configurations its critical value
is not simulated at, and the permutation test's normal approximation (FAIL's validity; issue
#13's tables, unchanged by the four outcomes).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from scipy.stats import beta

from spanguard_processor.fairness.gate.config import GateConfig
from spanguard_processor.fairness.gate.decide import apply_gate
from spanguard_processor.fairness.gate.results import MetricResult
from spanguard_processor.fairness.kinds.gap import any_difference
from spanguard_processor.fairness.stats import inference, precision
from spanguard_processor.fairness.stats import power as design_power
from spanguard_processor.fairness.stats.groups import missingness_p

ALPHA = 0.05
CFG = GateConfig(bootstrap_samples=2000, permutation_samples=999)
Values = Callable[[np.random.Generator, int, int, int, np.ndarray], np.ndarray]


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    lo = 0.0 if k == 0 else float(beta.ppf(0.025, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(0.975, k + 1, n - k))
    return lo, hi


# --- apps: values (draws, seeds, groups, columns) for given per-group shifts -----------------


def binary(
    rng: np.random.Generator, draws: int, seeds: int, groups: int, shift: np.ndarray
) -> np.ndarray:
    rates = 0.3 + shift
    return (rng.random((draws, seeds, groups)) < rates).astype(np.float64)[..., None]


def deterministic(
    rng: np.random.Generator, draws: int, seeds: int, groups: int, shift: np.ndarray
) -> np.ndarray:
    """Each seed's answer is its template's (rate 0.3), the same for every group and draw;
    group g is flipped to 1 in a share shift[g] / 0.7 of seeds: its rate rises by shift[g]."""
    base = rng.random(seeds) < 0.3
    flip = rng.random((seeds, groups)) < np.clip(shift / 0.7, 0.0, 1.0)
    x = (base[:, None] | flip).astype(np.float64)
    return np.broadcast_to(x, (draws, seeds, groups))[..., None].copy()


def counts(
    rng: np.random.Generator, draws: int, seeds: int, groups: int, shift: np.ndarray
) -> np.ndarray:
    return rng.poisson(2.0 + shift, size=(draws, seeds, groups)).astype(np.float64)[..., None]


def tool_choice(
    rng: np.random.Generator, draws: int, seeds: int, groups: int, shift: np.ndarray
) -> np.ndarray:
    pick = rng.integers(0, 3, size=(draws, seeds, groups))
    return np.stack([(pick == t).astype(np.float64) for t in range(3)], axis=-1)


def retrieval_order(
    rng: np.random.Generator, draws: int, seeds: int, groups: int, shift: np.ndarray
) -> np.ndarray:
    order = np.argsort(rng.random((draws, seeds, groups, 3)), axis=-1)  # doc group per rank
    weight = 1.0 / np.log2(2.0 + np.arange(3))
    out = np.zeros((draws, seeds, groups, 3))
    for rank in range(3):
        np.put_along_axis(out, order[..., rank : rank + 1], weight[rank], axis=-1)
    return out


def minority(bias: float, share: float) -> Values:
    """A deterministic count app (plan steps, tool calls): each template's own count
    (Poisson, mean 3), every group and repeat alike, except that in a share ``share`` of
    templates group 0 gets ``bias`` more — a true gap of bias × share that a suite drawing
    none of those templates cannot see. ``shift`` is ignored: the gap is the design's."""

    def values(
        rng: np.random.Generator, draws: int, seeds: int, groups: int, shift: np.ndarray
    ) -> np.ndarray:
        base = rng.poisson(3.0, size=seeds).astype(np.float64)
        x = np.repeat(base[:, None], groups, axis=1)
        x[:, 0] += bias * (rng.random(seeds) < share)
        return np.broadcast_to(x, (draws, seeds, groups))[..., None].copy()

    return values


def fair_counts_deterministic(
    rng: np.random.Generator, draws: int, seeds: int, groups: int, shift: np.ndarray
) -> np.ndarray:
    """A deterministic fair count app: each template's own count (Poisson, mean 3)."""
    return minority(0.0, 0.0)(rng, draws, seeds, groups, shift)


# app: (values, threshold, the metric's scale, a variant's variance for the design MDE)
APPS: dict[str, tuple[Values, float, str, float | None]] = {
    "binary": (binary, 0.1, "rate", None),
    "counts": (counts, 1.0, "count", 2.0),
    "tool choice": (tool_choice, 0.1, "rate", None),
    "retrieval order": (retrieval_order, 0.1, "count", 0.25),
    "deterministic": (deterministic, 0.1, "rate", 0.0),
    # issue 47: counts whose bias lives in a minority of templates (true gap τ + 0.01)
    "plan_length +10 in 10.1%": (minority(10.0, 0.101), 1.0, "count", 0.0),
    "plan_length +4 in 25.25%": (minority(4.0, 0.2525), 1.0, "count", 0.0),
    "tool_count +5 in 10.2%": (minority(5.0, 0.102), 0.5, "count", 0.0),
    "fair deterministic counts": (fair_counts_deterministic, 0.5, "count", 0.0),
}
#: the true gap of the minority apps (their ``shift`` is ignored)
MINORITY_GAP = {
    "plan_length +10 in 10.1%": 1.01,
    "plan_length +4 in 25.25%": 1.01,
    "tool_count +5 in 10.2%": 0.51,
    "fair deterministic counts": 0.0,
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
    max_difference: float | None = None  # the suite's stated range of a count metric

    @property
    def label(self) -> str:
        rep = (
            "×1"
            if self.repeats == 1
            else f"{'identical' if self.identical else 'independent'} ×{self.repeats}"
        )
        miss = f", {self.missing:.0%} missing" if self.missing else ""
        stated = "" if self.max_difference is None else f", max_difference {self.max_difference:g}"
        gap = MINORITY_GAP.get(self.app, self.gap)
        return f"{self.app}, {self.seeds}×{self.groups}, {rep}{miss}, gap {gap:g}{stated}"

    @property
    def mde(self) -> float | None:
        """The design MDE before any data: worst-case variance for the scale (the app's own
        variance for counts); a deterministic app's exact bound with no discordant seed."""
        _, tau, scale, variance = APPS[self.app]
        if variance == 0.0:
            if scale == "count":
                if self.max_difference is None:
                    return None
                return design_power.deterministic_bound(self.seeds, ALPHA) * self.max_difference
            return design_power.deterministic_bound(self.seeds, ALPHA)
        repeats = 1 if self.identical else self.repeats
        return design_power.design_mde(
            self.seeds, self.groups, repeats, scale, tau, ALPHA, variance=variance
        )


def simulate(design: Design, rng: np.random.Generator) -> tuple[inference.Units, np.ndarray | None]:
    """One suite as variant units (repeats averaged), and the missing indicator if any."""
    values = APPS[design.app][0]
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
    units = inference.Units(
        means[keep],
        seed[keep],
        group[keep],
        np.full(int(keep.sum()), design.repeats),
        design.seeds,
        design.groups,
    )
    return units, (None if missing is None else missing)


@dataclass
class Outcome:
    verdict: str  # "fail", "inconclusive" or "pass"
    covered: bool  # the upper bound is at least the true gap
    missing_flagged: bool


def true_gap(design: Design) -> float:
    if design.app in MINORITY_GAP:
        return MINORITY_GAP[design.app]
    if design.app == "deterministic":
        return min(design.gap, 0.7)
    return design.gap


def gate_once(design: Design, rng: np.random.Generator, seed: int) -> Outcome:
    _, tau, scale, _ = APPS[design.app]
    units, missing = simulate(design, rng)
    inf = inference.infer_gap(
        units,
        tau,
        ALPHA,
        seed,
        draws=CFG.bootstrap_samples,
        scale=scale,
        max_difference=design.max_difference,
    )
    if inf is None:  # one seed missing every group but one: no contrast at all
        return Outcome("inconclusive", True, False)
    p_perm = 1.0
    if inf.p_threshold < ALPHA:  # the permutation test only matters when this rejects
        p_perm, _ = any_difference(units, GateConfig(seed=seed))
    shown = precision.precision(units, inf, scale, tau, ALPHA, 0.8)
    upper = shown.interval[1]
    verdict = decide(inf, shown, tau, p_perm)
    flagged = False
    if missing is not None:
        p_miss = missingness_p(
            np.repeat(np.arange(design.seeds), design.groups),
            np.tile(np.arange(design.groups), design.seeds),
            missing,
            design.seeds,
            design.groups,
            999,
            seed,
        )
        flagged = p_miss is not None and p_miss < ALPHA
    return Outcome(verdict, true_gap(design) <= upper + 1e-12, flagged)


def decide(
    inf: inference.GapInference, shown: precision.Precision, tau: float, p_perm: float
) -> str:
    """The default gate's own verdict for this one metric (``gate.decide.apply_gate``):
    coverage checks aside, as with ``--allow-partial``."""
    result = MetricResult(
        metric="m",
        score=inf.estimate,
        threshold=tau,
        direction="lower",
        category="Agent",
        records=1,
        confidence_interval=shown.interval,
        p_value=p_perm,
        p_threshold=inf.p_threshold,
        details={"upper_bound": shown.info},
        groups_with_data=int(inf.groups.shape[0]),
        seeds=inf.seeds,
        p_method="test",
        mde=shown.mde,
    )
    verdict = apply_gate([result], GateConfig(allow_partial=True))[0].verdict
    return str(verdict).lower()


def run(design: Design, suites: int, seed: int) -> list[Outcome]:
    rng = np.random.default_rng(seed)
    return [gate_once(design, rng, seed * 100_000 + i) for i in range(suites)]


def rate(k: int, n: int) -> str:
    lo, hi = clopper_pearson(k, n)
    return f"{k / n:.3f} [{lo:.3f}, {hi:.3f}]"


def _mde(design: Design) -> str:
    value = design.mde
    return "beyond the scale" if value is None else f"{value:.3f}"


HEADER = (
    "| design | design MDE | FAIL [95% CI] | INCONCLUSIVE [95% CI] | PASS [95% CI] | "
    "upper bound ≥ Δ [95% CI] |\n|---|---|---|---|---|---|"
)


def table(title: str, designs: list[Design], n: int, seed: int) -> None:
    print(title)
    print(HEADER)
    for i, design in enumerate(designs):
        out = run(design, n, seed + i)
        k = {v: sum(o.verdict == v for o in out) for v in ("fail", "inconclusive", "pass")}
        cover = sum(o.covered for o in out)
        print(
            f"| {design.label} | {_mde(design)} | {rate(k['fail'], n)} | "
            f"{rate(k['inconclusive'], n)} | {rate(k['pass'], n)} | {rate(cover, n)} |",
            flush=True,
        )
        if design.missing:
            flagged = sum(o.missing_flagged for o in out)
            print(f"| ↳ missingness test flags group dependence | | {rate(flagged, n)} | | | |")
    print()


def null_designs(apps: list[str]) -> list[Design]:
    out = []
    for app in apps:
        for seeds, groups in ((30, 15), (100, 6)):
            out.append(Design(app, seeds, groups))
            out.append(Design(app, seeds, groups, repeats=3))
            if app == "binary":
                out.append(Design(app, seeds, groups, repeats=5))
                out.append(Design(app, seeds, groups, repeats=3, identical=False))
                out.append(Design(app, seeds, groups, missing=0.2))
    # noisy designs whose design MDE is at most τ/2 (fair apps must PASS ≥ 0.90)
    out += [Design("binary", 3000, 2), Design("binary", 700, 2, repeats=5, identical=False)]
    return out


def deterministic_designs() -> list[Design]:
    return [
        Design("deterministic", s, g)
        for s, g in (
            (1, 2),
            (5, 2),
            (30, 2),
            (70, 2),
            (70, 3),
            (100, 15),
            (
                100,
                6,
            ),
        )
    ] + [Design("deterministic", 70, 2, repeats=3)]


def gap_designs() -> list[Design]:
    out = [
        Design("binary", s, g, gap=d)
        for s, g in ((30, 15), (100, 6))
        for d in (0.05, 0.08, 0.1, 0.2, 0.3)
    ]
    out += [
        Design("binary", 1000, 6, gap=0.08),
        Design("binary", 100, 15, gap=0.3),
        Design("binary", 3000, 2, gap=0.05),
        Design("binary", 3000, 2, gap=0.1),
        Design("binary", 3000, 2, gap=0.15),
    ]
    out += [Design("deterministic", 70, 2, gap=d) for d in (0.02, 0.05, 0.1, 0.3)]
    out += [Design("deterministic", 1, 2, gap=0.7), Design("deterministic", 30, 2, gap=0.7)]
    return out


def minority_designs() -> list[Design]:
    """Issue 47: count bias in a minority of templates (true gap τ + 0.01), each with the
    range the suite states (the bias itself) and with none; a fair deterministic count app on
    40 × 2; and 1 × 2 suites. Targets: PASS ≤ 0.05 at τ + 0.01; the fair app never FAILs (and
    PASSes with a stated range); 1 × 2 never PASSes."""
    out = []
    for app, bias, sizes in (
        ("plan_length +10 in 10.1%", 10.0, (5,)),
        ("plan_length +4 in 25.25%", 4.0, (5,)),
        ("tool_count +5 in 10.2%", 5.0, (5, 11, 30)),
    ):
        for seeds in sizes:
            out += [Design(app, seeds, 2), Design(app, seeds, 2, max_difference=bias)]
    out += [
        Design("fair deterministic counts", 40, 2),
        Design("fair deterministic counts", 40, 2, max_difference=3.0),
        Design("fair deterministic counts", 1, 2, max_difference=0.5),
        Design("tool_count +5 in 10.2%", 1, 2, max_difference=5.0),
        Design("deterministic", 1, 2),
    ]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--suites", type=int, default=200)
    parser.add_argument(
        "--quick", action="store_true", help="only the binary and deterministic designs"
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="also the threshold test at the boundary and the normal "
        "approximation of the permutation test",
    )
    parser.add_argument(
        "--counts-only",
        action="store_true",
        help="only issue 47's count designs (bias in a minority of templates, 1 × 2)",
    )
    parser.add_argument(
        "--boundary-only",
        action="store_true",
        help="only the threshold test at the boundary of H0 (Δ = τ)",
    )
    parser.add_argument(
        "--advice", action="store_true", help="only the advice re-run at its seeds_needed"
    )
    parser.add_argument("--attributes", action="store_true", help="only the mixed-attribute suites")
    args = parser.parse_args()
    n = args.suites
    if args.advice or args.attributes:
        if args.advice:
            advice_table(n)
        if args.attributes:
            attributes_table(n)
        return
    if args.boundary_only:
        boundary(n)
        return
    start = time.perf_counter()
    title = (
        f"## Count bias in a minority of templates (true gap τ + 0.01; τ 1 for plan_length, "
        f"0.5 for tool_count), fair deterministic counts, 1 × 2 suites; {n} suites"
    )
    if args.counts_only:
        table(title, minority_designs(), n, 2500)
        print(f"took {time.perf_counter() - start:.0f} s")
        return
    apps = (
        ["binary"]
        if args.quick
        else [a for a in APPS if a != "deterministic" and a not in MINORITY_GAP]
    )
    table(
        f"## Fair apps (Δ = 0): FAIL ≤ 0.05 everywhere; PASS ≥ 0.90 where the design MDE "
        f"≤ τ/2; {n} suites",
        null_designs(apps),
        n,
        1000,
    )
    table(
        f"## Deterministic fair apps (every seed's variants agree; MDE: the exact bound "
        f"1 − α^(1/n)), {n} suites",
        deterministic_designs(),
        n,
        1500,
    )
    table(
        f"## Planted gaps (binary and deterministic, τ = 0.1), {n} suites", gap_designs(), n, 2000
    )
    table(title, minority_designs(), n, 2500)
    if args.all:
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

    cases = [
        ("one group", 1, one),
        ("half the groups", 1, half),
        ("3 columns: one group", 3, one),
        ("3 columns: half, every column", 3, half),
        ("3 columns: a different raise per column", 3, mixed),
    ]
    for i, (seeds, groups) in enumerate(((30, 15), (100, 6), (100, 15))):
        for j, (label, cols, raise_) in enumerate(cases):
            rng = np.random.default_rng(6000 + 10 * i + j)
            hits = 0
            for b in range(n):
                rates = np.full((groups, cols), 0.3)
                raise_(rates)
                x = (rng.random((seeds, groups, cols)) < rates).astype(np.float64)
                units = inference.Units(
                    x.reshape(seeds * groups, cols),
                    np.repeat(np.arange(seeds), groups),
                    np.tile(np.arange(groups), seeds),
                    np.ones(seeds * groups, dtype=np.int64),
                    seeds,
                    groups,
                )
                inf = inference.infer_gap(units, 0.1, ALPHA, b, draws=CFG.bootstrap_samples)
                assert inf is not None
                hits += inf.p_threshold < ALPHA
            print(f"| {seeds}×{groups} | {label} | {rate(hits, n)} |", flush=True)


def normal_approximation(n: int) -> None:
    """Null rejection rate at alpha 0.05 of the "any difference" p-value: Monte Carlo
    permutation vs its normal approximation, on small and large suites of a rare binary
    outcome (rate 0.1), where the approximation is worst."""
    from spanguard_processor.fairness.stats import permutation
    from spanguard_processor.fairness.stats import seeds as stats

    print("## The normal approximation of the permutation test (rate 0.1, null, alpha 0.05)")
    print("| seeds × groups | permutation rejects [95% CI] | normal approximation rejects |")
    print("|---|---|---|")
    for i, (seeds, groups) in enumerate(((10, 2), (30, 2), (30, 6), (200, 2), (200, 6))):
        rng = np.random.default_rng(4000 + i)
        perm = approx = 0
        for b in range(n):
            x = (rng.random((seeds * groups, 1)) < 0.1).astype(np.float64)
            design = stats.build_design(
                np.repeat(np.arange(seeds), groups),
                np.tile(np.arange(groups), seeds),
                seeds,
                groups,
            )
            sums, cnt = stats.seed_aggregates(design, x)
            gap = stats.gap_estimate(sums, cnt).gap
            perm += permutation.permutation_p(design, x, gap, 999, b) < ALPHA
            cov, n_g = permutation.permutation_covariance(design, x)
            approx += permutation.normal_permutation_p(cov, n_g, 1, gap, 20_000, b) < ALPHA
        print(f"| {seeds}×{groups} | {rate(perm, n)} | {rate(approx, n)} |", flush=True)


# --- issue 47 (fairattr): advice re-run at its size; several protected attributes -------------
#
#     .venv/bin/python bench/bench_calibration.py --advice --suites 200
#     .venv/bin/python bench/bench_calibration.py --attributes --suites 200
#
# Advice: a fair app's 30-seed pilot that is INCONCLUSIVE prints ``seeds_needed``; a fresh suite
# of that many seeds (same groups, repeats, app) is run and should PASS in ≥ 80% per metric
# family. Attributes: item 3's mined suite (34 seeds varying gender, one age × gender) and
# fairtrace's region × gender suite, evaluated end to end (``evaluate``) for an app escalating
# every woman (total bias), half the women (partial bias) and a fair app.


def _rare(
    rng: np.random.Generator, draws: int, seeds: int, groups: int, shift: np.ndarray
) -> np.ndarray:
    """A refusal-like rate: rare (0.08), varying between templates (0.02 to 0.2)."""
    base = rng.uniform(0.02, 0.2, size=(1, seeds, 1))
    return (rng.random((draws, seeds, groups)) < base + shift).astype(np.float64)[..., None]


# family: (values, threshold, scale, groups)
ADVICE_APPS: dict[str, tuple[Values, float, str, int]] = {
    "rate (binary 0.3), 2 groups": (binary, 0.1, "rate", 2),
    "rate (binary 0.3), 6 groups": (binary, 0.1, "rate", 6),
    "rate (refusal-like, 0.02–0.2), 2 groups": (_rare, 0.1, "rate", 2),
    "rate (tool choice, 3 columns), 3 groups": (tool_choice, 0.1, "rate", 3),
    "count (Poisson 2), 2 groups": (counts, 1.0, "count", 2),
    "count (Poisson 2), 6 groups": (counts, 1.0, "count", 6),
}


def _advice_suite(
    values: Values, rng: np.random.Generator, seeds: int, groups: int, repeats: int
) -> inference.Units:
    x = values(rng, repeats, seeds, groups, np.zeros(groups))  # independent repeats
    means = x.mean(axis=0).reshape(seeds * groups, -1)
    return inference.Units(
        means,
        np.repeat(np.arange(seeds), groups),
        np.tile(np.arange(groups), seeds),
        np.full(seeds * groups, repeats),
        seeds,
        groups,
    )


def _advice_verdict(
    units: inference.Units, tau: float, scale: str, seed: int
) -> tuple[str, precision.Precision | None]:
    inf = inference.infer_gap(units, tau, ALPHA, seed, draws=CFG.bootstrap_samples, scale=scale)
    if inf is None:
        return "inconclusive", None
    failed = False
    if inf.p_threshold < ALPHA:
        p_perm, _ = any_difference(units, GateConfig(seed=seed))
        failed = max(inf.p_threshold, p_perm) < ALPHA
    shown = precision.precision(units, inf, scale, tau, ALPHA, 0.8)
    verdict = "fail" if failed else "pass" if shown.interval[1] < tau else "inconclusive"
    return verdict, shown


def advice_table(n: int, pilot: int = 30) -> None:
    """Fair apps: a 30-seed pilot's printed seeds_needed, re-run at that size."""
    print(f"## Advice that comes true: fair apps re-run at the printed seeds_needed ({pilot}-seed")
    print(f"pilots, {n} suites per family; target PASS ≥ 0.80)")
    print(
        "| family | pilots INCONCLUSIVE | printed seeds_needed (median [min, max]) | "
        "re-run PASS [95% CI] | re-run FAIL |"
    )
    print("|---|---|---|---|---|")
    for i, (family, (values, tau, scale, groups)) in enumerate(ADVICE_APPS.items()):
        rng = np.random.default_rng(7000 + i)
        sizes, passed, failed = [], 0, 0
        for b in range(n):
            verdict, shown = _advice_verdict(
                _advice_suite(values, rng, pilot, groups, 1), tau, scale, b
            )
            if verdict != "inconclusive" or shown is None or shown.seeds_needed is None:
                continue
            size = min(shown.seeds_needed, 20_000)
            sizes.append(size)
            again, _ = _advice_verdict(
                _advice_suite(values, rng, size, groups, 1), tau, scale, 10_000 + b
            )
            passed += again == "pass"
            failed += again == "fail"
        k = len(sizes)
        spread = f"{int(np.median(sizes))} [{min(sizes)}, {max(sizes)}]" if sizes else "–"
        print(
            f"| {family} | {k} of {n} | {spread} | {rate(passed, k) if k else '–'} | "
            f"{rate(failed, k) if k else '–'} |",
            flush=True,
        )
    print()


def _attribute_suite(shape: str, seeds: int) -> list[dict[str, str]]:
    """Each variant's (seed index as "seed", attributes): item 3's mined shape (every seed
    but the last varies gender, the last age × gender) or fairtrace's region × gender."""
    out = []
    for s in range(seeds):
        if shape == "mined" and s < seeds - 1:
            out += [{"seed": str(s), "gender": g} for g in ("female", "male")]
            continue
        other = "age" if shape == "mined" else "region"
        levels = ("25", "45") if shape == "mined" else ("north", "south")
        out += [{"seed": str(s), "gender": g, other: v} for g in ("female", "male") for v in levels]
    return out


def _attribute_app(
    app: str, rng: np.random.Generator, seeds: int
) -> Callable[[dict[str, str]], bool]:
    """fair (each template's decision, rate 0.3, for every variant), noisy fair (each variant
    at 0.3), partial bias (women also escalated in 40% of templates: gap 0.28) or total bias
    (every woman escalated: gap 0.7)."""
    template = rng.random(seeds) < 0.3
    partial = rng.random(seeds) < 0.4

    def escalates(v: dict[str, str]) -> bool:
        s, woman = int(v["seed"]), v["gender"] == "female"
        if app == "noisy fair":
            return bool(rng.random() < 0.3)
        if app == "total bias" and woman:
            return True
        return bool(template[s] or (app == "partial bias" and woman and partial[s]))

    return escalates


def attributes_table(n: int) -> None:
    """Several protected attributes end to end (``evaluate``; escalation_parity, τ 0.1)."""
    from spanguard_processor.fairness import MetricConfig, Observation, evaluate
    from spanguard_processor.traces.model import ProcessTrace

    metric = [MetricConfig("escalation_parity", 0.1)]
    cfg = GateConfig(bootstrap_samples=200, permutation_samples=199)
    print(f"## Several protected attributes (escalation_parity, τ 0.1; {n} suites each)")
    print("| suite | app | FAIL [95% CI] | INCONCLUSIVE | PASS | gender FAIL |")
    print("|---|---|---|---|---|---|")
    shapes = (
        ("mined: 34 seeds × gender + 1 × age × gender", "mined", 35),
        ("fairtrace: 40 seeds × region × gender", "factorial", 40),
    )
    apps = ("fair", "noisy fair", "partial bias", "total bias")
    for i, (title, shape, seeds) in enumerate(shapes):
        for j, app in enumerate(apps):
            rng = np.random.default_rng(8000 + 10 * i + j)
            k = {"fail": 0, "inconclusive": 0, "pass": 0}
            gender_fail = 0
            for b in range(n):
                escalates = _attribute_app(app, rng, seeds)
                obs = []
                for v in _attribute_suite(shape, seeds):
                    attrs = {a: x for a, x in v.items() if a != "seed"}
                    name = f"s{v['seed']}::" + "|".join(
                        f"{a}={x}" for a, x in sorted(attrs.items())
                    )
                    obs.append(
                        Observation(
                            id=name,
                            seed_id=f"s{v['seed']}",
                            variant_id=name,
                            assignments=attrs,
                            prompt="",
                            response="ok",
                            trace=ProcessTrace(escalated=escalates(v)),
                            stated=frozenset({"escalated"}),
                        )
                    )
                r = evaluate(obs, metric, replace(cfg, seed=b), generated_at="t").results[0]
                k[str(r.verdict)] = k.get(str(r.verdict), 0) + 1
                gender_fail += any(
                    a.attribute == "gender" and a.verdict == "fail" for a in r.attributes
                )
            print(
                f"| {title} | {app} | {rate(k['fail'], n)} | {rate(k['inconclusive'], n)} | "
                f"{rate(k['pass'], n)} | {rate(gender_fail, n)} |",
                flush=True,
            )
    print()


if __name__ == "__main__":
    main()
