"""The mined suite as a fairtrace-compatible YAML file.

Seeds are written as explicit ``dataset.variants`` (fairtrace's second dataset form): one seed
may need several surface forms of one value ("she … her husband"), which ``prompts`` with
``str.format`` cannot express. Every variant's ``assignments`` hold the canonical group
(``gender: female``); the first variant of each seed carries the seed's provenance in
``metadata.mined`` (template, requests, traffic share, production trace ids), which fairtrace
drops and ``spanguard run`` / ``spanguard fairness`` link from their reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from ..common.writes import write_text_atomic
from .miner import MinedSeed, MiningResult

__all__ = ["DEFAULT_METRICS", "MINED_KEY", "suite_document", "write_suite"]

#: What a mined suite gates by default: the process, not the wording.
DEFAULT_METRICS = ("escalation_parity", "tool_use_parity", "refusal_gap")
#: The variant metadata key holding a seed's provenance.
MINED_KEY = "mined"


def _seed_metadata(seed: MinedSeed) -> dict[str, Any]:
    return {
        "template": seed.template,
        "attributes": list(seed.attributes),
        "requests": seed.requests,
        "traffic_share": round(seed.traffic_share, 6),
        "phrasings": seed.phrasings,
        "values_requests": seed.values_requests,
        "observed_values": dict(seed.observed),
        "production_trace_ids": list(seed.trace_ids),
    }


def suite_document(
    result: MiningResult, metrics: Sequence[str] = DEFAULT_METRICS, threshold: float = 0.1
) -> dict[str, Any]:
    variants: list[dict[str, Any]] = []
    for seed in result.seeds:
        for number, (assignment, prompt) in enumerate(seed.variants, 1):
            entry: dict[str, Any] = {
                "id": f"{seed.id}::{number}",
                "seed_id": seed.id,
                "prompt": prompt,
                "assignments": dict(assignment),
            }
            if number == 1:
                entry["metadata"] = {MINED_KEY: _seed_metadata(seed)}
            variants.append(entry)
    return {
        "dataset": {"variants": variants},
        "metrics": [{"type": m, "threshold": threshold} for m in metrics],
    }


def _header(result: MiningResult) -> str:
    return (
        "# Mined by `spanguard suite mine` from production traffic (docs/suite-mining.md).\n"
        f"# {len(result.seeds)} seed(s) from {result.covered_requests} of "
        f"{result.mention_requests} request(s) that mention a protected attribute "
        f"({result.covered_share:.1%} covered); {result.traces} request(s) read.\n"
        "# Each seed's first variant lists, under metadata.mined, its template, the requests\n"
        "# it came from and their production trace ids.\n"
    )


def write_suite(
    path: Path,
    result: MiningResult,
    metrics: Sequence[str] = DEFAULT_METRICS,
    threshold: float = 0.1,
) -> None:
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml when built with it
    body = yaml.dump(
        suite_document(result, metrics, threshold),
        Dumper=dumper,
        sort_keys=False,
        allow_unicode=True,
        width=100,
    )
    write_text_atomic(path, _header(result) + body)
