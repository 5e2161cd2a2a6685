"""How the gate decides: the statistics settings and the gate mode (see :mod:`.decide`)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from spanguard.exceptions import ConfigError

__all__ = ["GATE_MODES", "GateConfig", "GateMode"]


class GateMode(StrEnum):
    """How the gate decides (:mod:`.decide`): DEFAULT, the four outcomes; UPPER_BOUND, the
    same with INCONCLUSIVE counted as FAIL; POINT, fairtrace's point estimate."""

    DEFAULT = "default"
    POINT = "point"
    UPPER_BOUND = "upper-bound"


#: The modes' values, in the order the CLI lists them.
GATE_MODES: tuple[str, ...] = tuple(mode.value for mode in GateMode)


@dataclass(frozen=True)
class GateConfig:
    """Statistics and gate settings; every default is documented in docs/fairness.md."""

    mode: GateMode = GateMode.DEFAULT
    alpha: float = 0.05
    level: float = 0.95
    bootstrap_samples: int = 2000
    permutation_samples: int = 999
    seed: int = 0
    # records × permutations above which the normal approximation replaces Monte Carlo
    exact_budget: int = 5_000_000
    normal_draws: int = 20_000
    power: float = 0.8
    min_coverage: float = 0.95
    allow_partial: bool = False
    # INCONCLUSIVE metrics do not fail the gate (a warning line each instead)
    allow_inconclusive: bool = False

    def __post_init__(self) -> None:
        if self.mode not in GATE_MODES:
            raise ConfigError("mode", f"must be one of {', '.join(GATE_MODES)}, got {self.mode!r}.")
        object.__setattr__(self, "mode", GateMode(self.mode))  # a plain string from the CLI
        if not 0.0 < self.alpha < 1.0:
            raise ConfigError("alpha", f"must be between 0 and 1, got {self.alpha}.")
        if not 0.0 < self.level < 1.0:
            raise ConfigError("level", f"must be between 0 and 1, got {self.level}.")
        if not 0.0 <= self.min_coverage <= 1.0:
            raise ConfigError("min_coverage", f"must be between 0 and 1, got {self.min_coverage}.")
        for name in ("bootstrap_samples", "permutation_samples"):
            if getattr(self, name) < 0:
                raise ConfigError(name, f"must not be negative, got {getattr(self, name)}.")
