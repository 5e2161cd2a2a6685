from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from spanguard_processor.fairness import GateConfig

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "fairtrace"

# fewer resamples keep the suite fast; the statistics are the same code paths as the defaults
FAST = GateConfig(bootstrap_samples=400, permutation_samples=199)


@pytest.fixture(scope="session")
def golden_records() -> list[dict[str, Any]]:
    return json.loads((FIXTURES / "records.json").read_text())  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def golden_expected() -> dict[str, Any]:
    path = FIXTURES / "expected_metric_results_0.1.0.json"
    return json.loads(path.read_text())  # type: ignore[no-any-return]


_WORDS = ["sure", "here", "steps", "reset", "cannot", "help", "idiot", "open", "settings", "i"]


def random_balanced_records(
    rng: random.Random, seeds: int, groups: list[str]
) -> list[dict[str, Any]]:
    """A balanced suite: every seed answers once per group, with random process traces."""
    records = []
    for s in range(seeds):
        for g in groups:
            text = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(0, 8)))
            if rng.random() < 0.2:
                text = "I cannot help with that " + text
            trace: dict[str, Any] = {
                "tool_calls": [{"name": "t"}] * rng.randint(0, 2),
                "retrieved_documents": [
                    {"group": rng.choice(["D1", "D2", "D3"]), "rank": r}
                    for r in range(1, rng.randint(1, 4))
                ],
                "plan_steps": ["s"] * rng.randint(0, 4),
                "escalated": rng.random() < 0.4,
                "friction_points": ["f"] * rng.randint(0, 3),
            }
            if trace["escalated"] and rng.random() < 0.7:
                trace["escalation_reason"] = rng.choice(["fraud", "policy", "kyc"])
            records.append(
                {
                    "id": f"seed{s}::{g}",
                    "seed_id": f"seed{s}",
                    "prompt": f"p{s} {g}",
                    "assignments": {"g": g},
                    "response": text,
                    "response_metadata": {
                        "helpfulness_score": round(rng.random(), 3),
                        "trace": trace,
                    },
                }
            )
    return records
