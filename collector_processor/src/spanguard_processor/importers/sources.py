"""Reading a source by its name (:data:`SOURCES`) into variants and a validated suite; the
package re-exports it with the importers themselves (see its docstring)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spanguard.exceptions import ConfigError, InputError

from ._common import ImportedVariant, build_suite
from .deepeval import load_deepeval
from .fairtrace import load_fairtrace_deepeval, load_fairtrace_promptfoo
from .promptfoo import load_promptfoo

__all__ = [
    "SOURCES",
    "import_suite",
    "import_variants",
    "suite_of",
]


SOURCES = ("deepeval", "fairtrace-deepeval", "fairtrace-promptfoo", "promptfoo")


def import_suite(
    source: str,
    path: Path,
    metrics: Sequence[str],
    *,
    prompt_var: str | None = None,
    attributes: Sequence[str] = (),
    seed_var: str | None = None,
) -> dict[str, Any]:
    """Read ``path`` as ``source`` and return a validated suite with ``metrics``."""
    return suite_of(
        import_variants(
            source, path, prompt_var=prompt_var, attributes=attributes, seed_var=seed_var
        ),
        metrics,
        path,
    )


def suite_of(
    variants: Sequence[ImportedVariant], metrics: Sequence[str], path: Path
) -> dict[str, Any]:
    """The validated suite of imported variants with ``metrics``."""
    from ..fairness.design.suite import parse_suite

    if not metrics:
        raise ConfigError("metrics", "list at least one metric type, e.g. refusal_gap.")
    suite = build_suite(variants, metrics)
    parse_suite(suite, str(path))  # the suite spanguard run will read must load
    return suite


def import_variants(
    source: str,
    path: Path,
    *,
    prompt_var: str | None = None,
    attributes: Sequence[str] = (),
    seed_var: str | None = None,
) -> list[ImportedVariant]:
    """Read ``path`` as ``source``: its variants (with recorded outputs where it has them)."""
    if source == "promptfoo":
        variants = load_promptfoo(
            path, prompt_var=prompt_var, attributes=attributes, seed_var=seed_var
        )
    elif source == "deepeval":
        variants = load_deepeval(path, attributes=attributes, seed_var=seed_var)
    elif source == "fairtrace-promptfoo":
        variants = load_fairtrace_promptfoo(path)
    elif source == "fairtrace-deepeval":
        variants = load_fairtrace_deepeval(path)
    else:
        raise InputError(f"unknown source '{source}'; choose one of {', '.join(SOURCES)}.")
    if not variants:
        raise InputError("holds no test cases; expected at least one.", file=str(path))
    return variants
