"""Suite + observations → evaluation: match records to the suite's variants, then evaluate.

The suite is authoritative for the design: a matched record takes its seed and assignments
from its variant, so a trace recorded with stale or missing identity attributes cannot move a
record to another group.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from spanguard.exceptions import InputError

from .design.suite import Suite
from .evaluate import evaluate
from .evaluate_table import evaluate_sufficient
from .gate.config import GateConfig
from .gate.results import Evaluation
from .records import Observation, group_label, observation_from_entry, read_observations
from .stats.sufficient import SufficientStatistics
from .stream import BATCH, TableBuilder

__all__ = [
    "Matched",
    "Streamed",
    "evaluate_stream",
    "evaluate_suite",
    "iter_inputs",
    "match_to_suite",
    "read_inputs",
]


@dataclass(frozen=True)
class Matched:
    observations: tuple[Observation, ...]
    unmatched: int
    missing_variants: tuple[str, ...]


def match_to_suite(suite: Suite, observations: Iterable[Observation]) -> Matched:
    variants = {v.id: v for v in suite.variants}
    assigned_to: dict[str, dict[str, str]] = {}  # one dict per variant, not per record
    kept: list[Observation] = []
    unmatched = 0
    assigned = False  # some record assigns a group: a run of some counterfactual suite
    for o in observations:
        v = variants.get(o.variant_id)
        if v is None:
            unmatched += 1
            assigned = assigned or bool(o.assignments)
            continue
        assignments = assigned_to.get(v.id)
        if assignments is None:
            assignments = assigned_to[v.id] = dict(v.assignments)
        kept.append(
            replace(o, seed_id=v.seed_id, assignments=assignments, prompt=o.prompt or v.prompt)
        )
    # Suite order, then record id: the result must not depend on the order the inputs were read
    # in (several store partitions, rotated span files), down to the last bit of a float sum.
    order = {v.id: index for index, v in enumerate(suite.variants)}
    kept.sort(key=lambda o: (order[o.variant_id], o.id))
    seen = {o.variant_id for o in kept}
    missing = tuple(v.id for v in suite.variants if v.id not in seen)
    if not kept:
        raise _none_matched(suite, unmatched, assigned)
    return Matched(tuple(kept), unmatched, missing)


def _none_matched(suite: Suite, unmatched: int, assigned: bool) -> InputError:
    return InputError(
        f"none of the {unmatched} record(s) match a variant of the suite {suite.source}; "
        "records are matched by variant id (the record 'id' or the trace's variant_id), "
        f"e.g. '{suite.variants[0].id}'." + ("" if assigned else _NOT_A_RUN)
    )


# inputs that are no counterfactual run at all (no record assigns a group: production
# traffic, or nothing recorded): how to get one
_NOT_A_RUN = (
    " These records assign no group to any request: they look like production traffic, "
    "not a counterfactual suite's run. Record a run of the suite's variants with "
    "`spanguard run SUITE`, or write a suite from production traffic with "
    "`spanguard suite mine TRACES` and run that."
)


def evaluate_suite(
    suite: Suite,
    observations: Sequence[Observation],
    config: GateConfig | None = None,
    errors: Sequence[dict[str, Any]] = (),
) -> tuple[Evaluation, Matched]:
    """Match, evaluate every suite metric, and return the evaluation with match counts."""
    matched = match_to_suite(suite, observations)
    expected = [(v.id, v.seed_id, group_label(v.assignments)) for v in suite.variants]
    ev = evaluate(
        matched.observations,
        suite.metrics,
        config,
        variant_count=len(suite.variants),
        suite_digest=suite.digest,
        expected=expected,
    )
    return replace(ev, errors=tuple(errors)), matched


def read_inputs(paths: Sequence[Path]) -> list[Observation]:
    """Observations from every input of ``spanguard fairness`` (records or agent-trace files,
    span files, span stores), each of which must exist."""
    for path in paths:
        if not path.exists():
            raise InputError("does not exist.", file=str(path))
    return read_observations(paths)


def iter_inputs(paths: Sequence[Path]) -> Iterator[Observation]:
    """:func:`read_inputs` one observation at a time (nothing kept behind)."""
    from ..inputs.evaluation import RowFormat, read_evaluation_inputs  # loads protobuf

    for path in paths:
        if not path.exists():
            raise InputError("does not exist.", file=str(path))
    for entry in read_evaluation_inputs(list(paths), rows=RowFormat.FAIRTRACE):
        yield observation_from_entry(entry)


@dataclass(frozen=True)
class Streamed:
    """What :func:`evaluate_stream` saw besides the evaluation: records matching no variant,
    the suite's variants without a record, and the records per recorded variant (median)."""

    unmatched: int
    missing_variants: tuple[str, ...]
    repeats: int
    table: SufficientStatistics


def evaluate_stream(
    suite: Suite,
    observations: Iterable[Observation],
    config: GateConfig | None = None,
    batch: int = BATCH,
) -> tuple[Evaluation, Streamed]:
    """Match and reduce ``observations`` to the suite's sufficient-statistics table as they
    come (:mod:`.stream`), then evaluate the table (:mod:`.evaluate_table`): memory flat in
    the number of records; the evaluation holds no record (see :mod:`.evaluate_table` for
    what its reports leave out); ``batch``: observations per metric computation."""
    builder = TableBuilder(suite, batch)
    builder.add(observations)
    table = builder.table()
    if not table.observed:
        raise _none_matched(suite, table.unmatched, builder.assigned)
    recorded = {(c.seed_id, c.group): c.records for c in table.observed}
    keys = [(v.id, (v.seed_id, group_label(v.assignments))) for v in suite.variants]
    missing = tuple(v for v, key in keys if key not in recorded)
    counts = sorted(recorded.values())
    repeats = max(1, counts[(len(counts) - 1) // 2])  # median_low
    ev = evaluate_sufficient(table, suite, config)
    return ev, Streamed(table.unmatched, missing, repeats, table)
