"""A fairness suite file for tests: one prompt per seed, every seed with the same attributes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_suite(
    path: Path, prompts: dict[str, str], attributes: dict[str, list[str]], metric: dict[str, Any]
) -> Path:
    """Write the suite at ``path``: a seed per (id, prompt template) of ``prompts``, each
    varied over ``attributes``, judged by the one ``metric``; returns ``path``."""
    path.write_text(
        json.dumps(
            {
                "dataset": {
                    "prompts": [
                        {"id": seed, "prompt": prompt, "attributes": attributes}
                        for seed, prompt in prompts.items()
                    ]
                },
                "metrics": [metric],
            }
        )
    )
    return path
