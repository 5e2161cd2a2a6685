"""The stability kind (``counterfactual_stability``): each seed's mean pairwise similarity of
its variants' outputs, the score their minimum, the interval a seed bootstrap's. Report only:
there is no noise model to test it against (:mod:`..gate`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import NDArray

from ..design.suite import MetricConfig
from ..gate.config import GateConfig
from ..gate.results import MetricResult
from ..metrics import MetricDefinition
from ..metrics.compat import EXACT_LIMIT, stability_similarities
from ..stats.seeds import bias_corrected_interval, bootstrap_seed_counts
from ..stats.stability import stability_arrays
from .base import KindStrategy, Prepared, RecordIndex
from .evidence import stability_pairs

__all__ = ["StabilityPrepared", "StabilityStrategy"]


@dataclass(frozen=True, kw_only=True, eq=False)
class StabilityPrepared(Prepared):
    """The seeds' similarities (``seed_sims``) and, after the bootstrap, its draws of the
    minimum."""

    seed_sims: NDArray[np.float64]
    draws: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))


class StabilityStrategy(KindStrategy[StabilityPrepared]):
    def prepare(
        self, config: MetricConfig, definition: MetricDefinition, design: RecordIndex
    ) -> StabilityPrepared:
        obs = design.observations
        if len(obs) <= EXACT_LIMIT:  # fairtrace's exact per-seed means, pair by pair
            seeds, scenarios = stability_similarities(obs)
            seed_sims = np.fromiter(seeds.values(), dtype=np.float64, count=len(seeds))
        else:
            seed_sims, per_record = stability_arrays(obs, design.seed, design.n_seeds)
            seeds = dict(zip(design.seed_labels, seed_sims.tolist(), strict=True))
            scenarios = dict(zip([o.id for o in obs], per_record.tolist(), strict=True))
        return StabilityPrepared(
            config=config,
            definition=definition,
            score=float(seed_sims.min()) if len(seeds) else 1.0,
            details={"seed_similarities": seeds, "scenario_similarities": scenarios},
            seed_sims=seed_sims,
        )

    def bootstrap(
        self, prepared: Sequence[StabilityPrepared], design: RecordIndex, cfg: GateConfig
    ) -> list[StabilityPrepared]:
        """Seeds drawn with replacement, the statistic the minimum over the drawn seeds; one
        stream of draws for every stability metric."""
        if not prepared or cfg.bootstrap_samples <= 0:
            return list(prepared)
        orders = [np.argsort(p.seed_sims, kind="stable") for p in prepared]
        draws: list[list[NDArray[np.float64]]] = [[] for _ in prepared]
        for weights in bootstrap_seed_counts(design.n_seeds, cfg.bootstrap_samples, cfg.seed):
            for p, order, out in zip(prepared, orders, draws, strict=True):
                drawn = (weights > 0)[:, order]
                out.append(p.seed_sims[order][np.argmax(drawn, axis=1)])
        return [
            replace(p, draws=np.concatenate(d)) if d else p
            for p, d in zip(prepared, draws, strict=True)
        ]

    def result(
        self,
        prepared: StabilityPrepared,
        design: RecordIndex,
        cfg: GateConfig,
        p_missing: float | None,
    ) -> MetricResult:
        p = prepared
        interval = (
            bias_corrected_interval(p.draws, p.score, cfg.level)
            if p.draws.size and p.seed_sims.size >= 2
            else None
        )
        return MetricResult(
            score=p.score,
            confidence_interval=interval,
            p_value=None,
            details=p.details,
            groups_with_data=2,
            seeds=int(p.seed_sims.size),
            p_method=None,
            **p.base(design),
        )

    def evidence(
        self, result: MetricResult, prepared: StabilityPrepared, design: RecordIndex, pairs: int
    ) -> MetricResult:
        """The least stable seeds, each as its two least similar variants."""
        sims = prepared.details.get("seed_similarities", {})
        return replace(result, evidence=stability_pairs(design.observations, sims, pairs))
