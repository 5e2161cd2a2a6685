"""The mined suite as a fairtrace-compatible YAML file.

Seeds are written as explicit ``dataset.variants`` (fairtrace's second dataset form): one seed
may need several surface forms of one value ("she … her husband"), which ``prompts`` with
``str.format`` cannot express. Every variant's ``assignments`` hold the canonical group
(``gender: female``); the first variant of each seed carries the seed's provenance in
``metadata.mined`` (template, requests, traffic share, production trace ids), which fairtrace
drops and ``spanguard run`` / ``spanguard fairness`` link from their reports.

The metrics (:mod:`.metrics`) are written by hand after the dataset, so that each count
metric's ``max_difference`` carries a comment saying what it means and where it comes from.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from ..common.writes import write_text_atomic
from .metrics import MinedMetric
from .miner import MinedSeed, MiningResult

__all__ = ["MINED_KEY", "metrics_yaml", "suite_document", "write_suite"]

#: The variant metadata key holding a seed's provenance.
MINED_KEY = "mined"


def _seed_metadata(seed: MinedSeed) -> dict[str, Any]:
    return {
        "template": seed.template,
        "attributes": list(seed.attributes),
        "requests": seed.requests,
        "users": seed.users,
        "traffic_share": round(seed.traffic_share, 6),
        "phrasings": seed.phrasings,
        "values_users": seed.values_users,
        "observed_values": dict(seed.observed),
        "production_trace_ids": list(seed.trace_ids),
    }


def suite_document(result: MiningResult) -> dict[str, Any]:
    """The suite's ``dataset`` (the metrics: :func:`metrics_yaml`)."""
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
    return {"dataset": {"variants": variants}}


def metrics_yaml(metrics: Sequence[MinedMetric]) -> str:
    """The ``metrics`` list, each ``max_difference`` under a comment saying what it is."""
    lines = ["metrics:"]
    for m in metrics:
        lines += [f"- type: {m.type}", f"  threshold: {m.threshold!r}"]
        if m.max_difference is not None:
            lines += [
                "  # max_difference: the largest difference between two groups, within one seed,",
                "  # that this count metric can take; its PASS bound rests on it. "
                f"{m.why}, docs/suite-mining.md.",
                f"  max_difference: {m.max_difference}",
            ]
    return "\n".join(lines) + "\n"


def _header(result: MiningResult) -> str:
    return (
        "# Mined by `spanguard suite mine` from production traffic (docs/suite-mining.md).\n"
        f"# {len(result.seeds)} seed(s) from {result.covered_requests} of "
        f"{result.mention_requests} request(s) that mention a protected attribute "
        f"({result.covered_share:.1%} covered); {result.traces} request(s) read.\n"
        "# Each seed's first variant lists, under metadata.mined, its template, the requests\n"
        "# it came from and their production trace ids.\n"
    )


def write_suite(path: Path, result: MiningResult, metrics: Sequence[MinedMetric]) -> None:
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml when built with it
    body = yaml.dump(
        suite_document(result),
        Dumper=dumper,
        sort_keys=False,
        allow_unicode=True,
        width=100,
    )
    write_text_atomic(path, _header(result) + body + metrics_yaml(metrics))
