"""The gate fed by the sufficient-statistics table (fairness/evaluate_table.py), the table filled
as records stream (fairness/stream.py): the same results as the records path, in memory that
does not grow with the records (issue 50)."""

from __future__ import annotations

import gc
import json
import random
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from spanguard.exceptions import InputError
from spanguard_processor.fairness import GateConfig, Suite, observation_from_record, parse_suite
from spanguard_processor.fairness.evaluate_table import evaluate_sufficient
from spanguard_processor.fairness.metrics import get_metric, metric_names
from spanguard_processor.fairness.pipeline import evaluate_stream, evaluate_suite
from spanguard_processor.fairness.records import Observation
from spanguard_processor.fairness.report.reports import report_dict
from spanguard_processor.fairness.stream import reduce_observations
from spanguard_processor.fairness.vocabulary import Kind

from .conftest import random_balanced_records

CFG = GateConfig(bootstrap_samples=200, permutation_samples=99)
GAP = [n for n in metric_names() if get_metric(n).kind == Kind.GAP]  # type: ignore[union-attr]
# what only the records path can say: each record's value
PER_RECORD = {"scenario_scores", "scenario_exposures", "scenario_reasons", "scenario_reason_gaps"}


def _suite(records: list[dict[str, Any]], names: list[str] = GAP) -> Suite:
    variants: dict[str, dict[str, Any]] = {}
    for r in records:
        variant = r["id"].split("#")[0]
        variants.setdefault(
            variant,
            {
                "id": variant,
                "seed_id": r["seed_id"],
                "prompt": r["prompt"],
                "assignments": r["assignments"],
            },
        )
    metrics = [{"type": n, "threshold": get_metric(n).threshold} for n in names]  # type: ignore[union-attr]
    return parse_suite({"dataset": {"variants": list(variants.values())}, "metrics": metrics})


def _results(ev: Any) -> list[dict[str, Any]]:
    out = []
    for r in report_dict(ev, scenarios=False)["metric_results"]:
        r = dict(r)
        r.pop("evidence")
        r["details"] = {k: v for k, v in r["details"].items() if k not in PER_RECORD}
        out.append(r)
    return out


def _both(records: list[dict[str, Any]], batch: int) -> tuple[Any, Any]:
    suite = _suite(records)
    obs = [observation_from_record(r) for r in records]
    by_records, _ = evaluate_suite(suite, obs, CFG)
    table = reduce_observations(suite, reversed(obs), batch=batch)  # another order, in batches
    by_table = evaluate_sufficient(table, suite, CFG, generated_at=by_records.generated_at)
    return by_records, by_table


def _two_attributes(rng: random.Random) -> list[dict[str, Any]]:
    records = random_balanced_records(rng, 24, ["a", "b"])
    for i, r in enumerate(records):
        r["assignments"] = {"g": r["assignments"]["g"], "age": ("young", "old")[i % 4 // 2]}
        r["id"] += f"-{i % 4}"
    return records


@pytest.mark.parametrize(
    "make",
    [
        lambda rng: random_balanced_records(rng, 30, ["a", "b"]),
        # unbalanced: some seeds lack a group (within-seed contrasts, not pooled means)
        lambda rng: [
            r for i, r in enumerate(random_balanced_records(rng, 12, list("abc"))) if i % 7 != 3
        ],
        _two_attributes,
    ],
    ids=["balanced", "unbalanced", "two-attributes"],
)
def test_the_table_gives_the_records_paths_results_bit_for_bit(
    make: Callable[[random.Random], list[dict[str, Any]]],
) -> None:
    by_records, by_table = _both(make(random.Random(5)), batch=7)
    assert _results(by_table) == _results(by_records)
    assert by_table.record_count == len(by_records.observations)
    assert by_table.seeds == by_records.seeds and by_table.passed == by_records.passed


def _repeated(seeds: int, repeats: int, rng: random.Random) -> Iterator[dict[str, Any]]:
    """A run of ``seeds`` × 2 groups, each variant recorded ``repeats`` times (one at a time)."""
    for s in range(seeds):
        for g in ("a", "b"):
            for k in range(repeats):
                yield {
                    "id": f"s{s}::{g}" + (f"#{k}" if k else ""),
                    "seed_id": f"s{s}",
                    "prompt": f"p{s}",
                    "assignments": {"g": g},
                    "response": "ok",
                    "response_metadata": {
                        "helpfulness_score": round(rng.random() * 0.5 + 0.3 * (g == "a"), 3),
                        "trace": {
                            "tool_calls": [{"name": "t"}] * rng.randint(0, 2),
                            "escalated": rng.random() < 0.3,
                        },
                    },
                }


def test_with_repeats_verdicts_agree_and_pooled_means_are_exact() -> None:
    """A variant's repeats become one unit: its mean is the exact sum over the count, where the
    records path sums in record-id order, so only the last bits of the statistics may differ."""
    names = ["helpfulness_gap", "tool_count_gap", "escalation_parity"]
    records = list(_repeated(40, 5, random.Random(2)))
    suite = _suite(records, names)
    obs = [_observation(r) for r in records]
    by_records, _ = evaluate_suite(suite, obs, CFG)
    by_table, seen = evaluate_stream(suite, iter(obs), CFG)
    assert seen.repeats == 5 and seen.unmatched == 0 and not seen.missing_variants
    for a, b in zip(_results(by_records), _results(by_table), strict=True):
        assert (a["metric"], a["verdict"]) == (b["metric"], b["verdict"])
        key = get_metric(a["metric"]).detail_key  # type: ignore[union-attr]
        assert a["details"][key] == b["details"][key]  # pooled group means: exact on both paths
        assert b["score"] == pytest.approx(a["score"], rel=1e-12, abs=1e-15)
        assert b["confidence_interval"] == pytest.approx(a["confidence_interval"], rel=1e-9)
        assert b["p_value"] == pytest.approx(a["p_value"], rel=1e-9)


def test_the_table_does_not_depend_on_the_order_or_the_batches() -> None:
    obs = [_observation(r) for r in _repeated(10, 4, random.Random(9))]
    suite = _suite([o.record() for o in obs], ["helpfulness_gap", "tool_count_gap"])
    shuffled = list(obs)
    random.Random(1).shuffle(shuffled)
    assert reduce_observations(suite, obs, batch=1000) == reduce_observations(
        suite, shuffled, batch=3
    )


def _observation(record: dict[str, Any]) -> Observation:
    """A record as a repeat of its variant (the id before '#')."""
    o = observation_from_record(record)
    return replace(o, variant_id=o.id.split("#")[0])


def _peak(run: Callable[[Iterator[Observation]], object], records: Iterator[dict[str, Any]]) -> int:
    observations = (_observation(r) for r in records)
    gc.collect()
    tracemalloc.start()
    try:
        run(observations)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_streamed_memory_does_not_grow_with_the_records() -> None:
    """Four times the records (the same suite, more repeats) cost the stream next to nothing,
    where the records path's peak grows with them (the measure can tell the two apart)."""
    names = ["helpfulness_gap", "tool_count_gap"]
    suite = _suite(list(_repeated(50, 1, random.Random(0))), names)

    def stream(o: Iterator[Observation]) -> object:
        return evaluate_stream(suite, o, CFG, batch=100)

    def records(o: Iterator[Observation]) -> object:
        return evaluate_suite(suite, list(o), CFG)

    small, large = 6, 24  # repeats: 600 and 2,400 records
    grew = _peak(stream, _repeated(50, large, random.Random(0))) - _peak(
        stream, _repeated(50, small, random.Random(0))
    )
    grew_records = _peak(records, _repeated(50, large, random.Random(0))) - _peak(
        records, _repeated(50, small, random.Random(0))
    )
    per_record_records = grew_records / (100 * (large - small))
    per_record = grew / (100 * (large - small))
    assert per_record_records > 500, per_record_records  # bytes a record on the records path
    assert per_record < 20, per_record  # the stream: flat, up to noise


def test_a_metric_that_reads_texts_cannot_stream_or_come_from_a_table() -> None:
    records = random_balanced_records(random.Random(1), 4, ["a", "b"])
    suite = _suite(records, ["counterfactual_stability"])
    obs = [observation_from_record(r) for r in records]
    with pytest.raises(InputError, match=r"<suite>: field 'metrics\[0\]\.type': .*stability"):
        reduce_observations(suite, obs)
    table = reduce_observations(_suite(records, ["helpfulness_gap"]), obs)
    with pytest.raises(InputError, match="counterfactual_stability"):
        evaluate_sufficient(table, suite, CFG)


def test_a_table_needs_one_variant_per_seed_and_group() -> None:
    records = random_balanced_records(random.Random(1), 4, ["a", "b"])
    suite = _suite(records, ["helpfulness_gap"])
    table = reduce_observations(suite, [observation_from_record(r) for r in records])
    doubled = parse_suite(
        {
            "dataset": {
                "variants": [
                    {
                        "id": v.id + suffix,
                        "seed_id": v.seed_id,
                        "prompt": v.prompt,
                        "assignments": dict(v.assignments),
                    }
                    for v in suite.variants
                    for suffix in ("", "-again")
                ]
            },
            "metrics": [{"type": "helpfulness_gap", "threshold": 0.1}],
        }
    )
    with pytest.raises(InputError, match="two variants"):
        evaluate_sufficient(table, doubled, CFG)
    other = _suite(random_balanced_records(random.Random(1), 2, ["x", "y"]), ["helpfulness_gap"])
    with pytest.raises(InputError, match="does not"):
        evaluate_sufficient(table, other, CFG)


def test_nothing_matched_is_the_records_paths_error() -> None:
    records = random_balanced_records(random.Random(1), 3, ["a", "b"])
    suite = _suite(random_balanced_records(random.Random(1), 2, ["x", "y"]), ["helpfulness_gap"])
    with pytest.raises(InputError, match="none of the 6 record"):
        evaluate_stream(suite, (observation_from_record(r) for r in records), CFG)


@pytest.mark.parametrize("inputs", ["traces", "records"])
def test_fairness_stream_gives_the_same_verdicts_and_statistics(
    tmp_path: Path, inputs: str
) -> None:
    """``spanguard fairness --stream``: the same lines and exit code, the same report figures;
    only what needs every record (scenario_results, per-record values, evidence) is left out."""
    from spanguard_processor.cli import cli

    from ..files.conftest import FAST, build_workspace

    ws = build_workspace(tmp_path / "ws")
    outcomes = []
    for flags in ([], ["--stream"]):
        out = tmp_path / f"out{len(flags)}"
        result = CliRunner().invoke(
            cli,
            ["fairness", str(ws.suite), str(getattr(ws, inputs)), *FAST, "-o", str(out), *flags],
            env={"SOURCE_DATE_EPOCH": "1700000000"},
        )
        assert result.exit_code in (0, 1), result.output
        report = json.loads((out / "report.json").read_text(encoding="utf-8"))
        outcomes.append((result, report))
    (plain, plain_report), (streamed, streamed_report) = outcomes
    assert streamed.exit_code == plain.exit_code
    evidence = " " * 13 + "seed "  # a metric's top counterfactual pair: records only
    lines = [line for line in plain.stdout.splitlines() if not line.startswith(evidence)]
    assert streamed.stdout.replace("out1", "out0").splitlines() == lines
    assert streamed_report["scenario_results"] == []
    assert streamed_report["spanguard"] == plain_report["spanguard"]
    for a, b in zip(plain_report["metric_results"], streamed_report["metric_results"], strict=True):
        a.pop("evidence"), b.pop("evidence")
        a["details"] = {k: v for k, v in a["details"].items() if k not in PER_RECORD}
        assert a == b


def test_a_table_as_an_engine_writes_it_gives_the_same_verdicts() -> None:
    """Cells only (``reduce_values``: what the SQL map returns; no exact totals, no observed
    cells, no signal counts): the same statistics and verdicts."""
    from spanguard_processor.fairness.stats.sufficient import SufficientStatistics, reduce_values

    names = ["escalation_parity", "tool_count_gap", "helpfulness_gap"]
    records = random_balanced_records(random.Random(8), 30, ["a", "b"])
    suite = _suite(records, names)
    obs = [observation_from_record(r) for r in records]
    by_records, _ = evaluate_suite(suite, obs, CFG)
    cells = []
    for name in names:
        values = get_metric(name).compute(obs, {})  # type: ignore[union-attr]
        table = reduce_values(
            name,
            [o.seed_id for o in obs],
            [o.group for o in obs],
            [o.variant_id for o in obs],
            values.values,
            values.valid,
        )
        cells += table.cells
    engine = SufficientStatistics(tuple(cells), (), ())
    by_table = evaluate_sufficient(engine, suite, CFG, generated_at=by_records.generated_at)
    for a, b in zip(_results(by_records), _results(by_table), strict=True):
        assert (a["metric"], a["verdict"], a["score"]) == (b["metric"], b["verdict"], b["score"])
        assert a["confidence_interval"] == b["confidence_interval"]
        assert a["p_value"] == b["p_value"]
