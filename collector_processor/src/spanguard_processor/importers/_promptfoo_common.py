"""What promptfoo's test files (:mod:`.promptfoo`) and its results.json
(:mod:`.promptfoo_results`) read the same way: a test's kept metadata and its seed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spanguard.exceptions import InputError

__all__ = ["kept", "seed_of"]


def kept(test: Mapping[str, Any], default: Mapping[str, Any]) -> dict[str, Any]:
    """What a test says besides its vars, kept as the variant's metadata."""
    meta: dict[str, Any] = {}
    asserts = [*list(default.get("assert") or []), *list(test.get("assert") or [])]
    if asserts:
        meta["assert"] = asserts
    for key in ("description", "options", "threshold"):
        if test.get(key) not in (None, {}, ""):
            meta[key] = test[key]
    if isinstance(test.get("metadata"), Mapping) and test["metadata"]:
        meta["promptfoo_metadata"] = dict(test["metadata"])
    return meta


def seed_of(
    text: Mapping[str, str],
    chosen: set[str],
    prompt_var: str | None,
    seed_var: str | None,
    seeds: dict[tuple[tuple[str, str], ...], str],
    file: str,
    line: int | None,
) -> str:
    """The seed of a test without ``metadata.seed_id``: its ``seed_var`` value, else the one
    shared by every test with the same non-attribute vars."""
    if seed_var is not None:
        if seed_var not in text:
            raise InputError(
                f"the test has no '{seed_var}' var (`seed_var`).",
                file=file,
                line=line,
                field=f"vars.{seed_var}",
            )
        return text[seed_var]
    group = tuple(sorted((k, v) for k, v in text.items() if k not in chosen and k != prompt_var))
    return seeds.setdefault(group, f"seed-{len(seeds) + 1}")
