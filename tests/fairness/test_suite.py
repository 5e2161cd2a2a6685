"""Suite loading, validation (exact messages, exit 2, never a traceback) and expansion."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from spanguard.exceptions import SuiteError
from spanguard_processor.cli import cli
from spanguard_processor.fairness import load_suite, parse_suite

_GOOD_METRICS = [{"type": "tool_use_parity"}]


def _prompts(*prompts: dict[str, Any]) -> dict[str, Any]:
    return {"dataset": {"prompts": list(prompts)}, "metrics": _GOOD_METRICS}


BAD_SUITES: list[tuple[object, str]] = [
    ([], "must be a mapping (an object), got an empty list."),
    (
        {
            "dataset": {"prompts": [{"id": "a", "prompt": "x"}]},
            "metrics": _GOOD_METRICS,
            "extra": 1,
            "alpha": 2,
        },
        "field 'alpha': unknown field; allowed fields are dataset, metrics.",
    ),
    (
        {"metrics": _GOOD_METRICS},
        "field 'dataset': is required: give dataset.prompts or dataset.variants.",
    ),
    (
        {"dataset": {"prompts": [], "variants": []}, "metrics": _GOOD_METRICS},
        "field 'dataset': must define exactly one of prompts or variants.",
    ),
    (
        {"dataset": {"prompts": []}, "metrics": _GOOD_METRICS},
        "field 'dataset.prompts': must be a non-empty list, got an empty list.",
    ),
    (
        _prompts({"id": " ", "prompt": "x"}),
        "field 'dataset.prompts[0].id': must be a non-empty string, got an empty string.",
    ),
    (
        _prompts({"id": "a", "prompt": "x"}, {"id": "a", "prompt": "y"}),
        "field 'dataset.prompts[1].id': duplicates the prompt id 'a'; ids must be unique.",
    ),
    (
        _prompts({"id": "a", "prompt": "Hi {g}", "attributes": {"g": ["m", 3]}}),
        "field 'dataset.prompts[0].attributes.g[1]': must be a non-empty string, got the number 3;"
        " quote numbers.",
    ),
    (
        _prompts({"id": "a", "prompt": "Hi {g}", "attributes": {"g": []}}),
        "field 'dataset.prompts[0].attributes.g': must be a non-empty list, got an empty list.",
    ),
    (
        _prompts({"id": "a", "prompt": "Hi {name}", "attributes": {"g": ["m"]}}),
        "field 'dataset.prompts[0].prompt': references undefined attributes: name.",
    ),
    (
        _prompts({"id": "a", "prompt": "Hi {}", "attributes": {"g": ["m"]}}),
        "field 'dataset.prompts[0].prompt': uses a positional placeholder '{}'; name an "
        "attribute, e.g. {gender}.",
    ),
    (
        _prompts({"id": "a", "prompt": "Hi {g.upper}", "attributes": {"g": ["m"]}}),
        "field 'dataset.prompts[0].prompt': uses the placeholder '{g.upper}'; only plain "
        "attribute names are allowed, e.g. {gender}.",
    ),
    (
        _prompts({"id": "a", "prompt": "Hi {g", "attributes": {"g": ["m"]}}),
        "field 'dataset.prompts[0].prompt': is not a valid template (expected '}' before end of "
        "string); write a literal brace as {{ or }}.",
    ),
    (
        {
            "dataset": {
                "variants": [{"id": "v", "seed_id": "s", "prompt": "p", "assignments": {"g": 1}}]
            },
            "metrics": _GOOD_METRICS,
        },
        "field 'dataset.variants[0].assignments.g': must be a non-empty string, got the number 1.",
    ),
    (
        {"dataset": {"variants": [{"id": "v", "prompt": "p"}]}, "metrics": _GOOD_METRICS},
        "field 'dataset.variants[0].seed_id': must be a non-empty string, got nothing.",
    ),
    (
        {"dataset": {"prompts": [{"id": "a", "prompt": "x"}]}},
        "field 'metrics': is required: list at least one metric, e.g. "
        '[{"type": "tool_use_parity"}].',
    ),
    (
        {"dataset": {"prompts": [{"id": "a", "prompt": "x"}]}, "metrics": [{"type": "nope"}]},
        "field 'metrics[0].type': unknown metric type 'nope'; known types are "
        "counterfactual_stability, escalation_parity, escalation_reason_parity, "
        "friction_point_gap, helpfulness_gap, llm_call_gap, plan_length_gap, refusal_gap, "
        "retrieval_exposure_gap, retrieval_exposure_gap_legacy, token_gap, tool_count_gap, "
        "tool_name_gap, tool_sequence_gap, tool_use_parity, toxicity_gap, verbosity_gap.",
    ),
    (
        {
            "dataset": {"prompts": [{"id": "a", "prompt": "x"}]},
            "metrics": [{"type": "tool_use_parity", "threshold": None}],
        },
        "field 'metrics[0].threshold': must be a finite number, got null.",
    ),
    (
        {
            "dataset": {"prompts": [{"id": "a", "prompt": "x"}]},
            "metrics": [{"type": "tool_use_parity", "bootstrap_samples": "many"}],
        },
        "field 'metrics[0].bootstrap_samples': must be a non-negative integer, got a string.",
    ),
    (
        {
            "dataset": {"prompts": [{"id": "a", "prompt": "x"}]},
            "metrics": [{"type": "tool_use_parity", "name": "x"}],
        },
        "field 'metrics[0].name': unknown field; allowed fields are type, threshold, "
        "optional, max_difference, bootstrap_samples, permutation_samples, random_seed.",
    ),
    (
        {
            "dataset": {"prompts": [{"id": "a", "prompt": "x"}]},
            "metrics": [{"type": "tool_use_parity"}, {"type": "tool_use_parity"}],
        },
        "field 'metrics[1].type': the metric 'tool_use_parity' is listed twice; list each metric "
        "once.",
    ),
    (
        {
            "dataset": {"prompts": [{"id": "a", "prompt": "x"}]},
            "metrics": [{"type": "helpfulness_gap", "helpfulness_evaluator": 3}],
        },
        "field 'metrics[0].helpfulness_evaluator': must be a module:function string, got the "
        "number 3.",
    ),
]


@pytest.mark.parametrize(("suite", "message"), BAD_SUITES)
def test_bad_suite_gives_exact_message_and_exit_2(
    tmp_path: Path, suite: object, message: str
) -> None:
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(suite))
    records = tmp_path / "r.jsonl"
    records.write_text("")
    result = CliRunner().invoke(cli, ["fairness", str(path), str(records)])
    assert result.exit_code == 2, result.output
    # the suite is one line of JSON, so every field error is on line 1
    located = f"{path}:1" if message.startswith("field") else str(path)
    assert result.output == f"Error: {located}: {message}\n"
    assert "Traceback" not in result.output


def test_invalid_json_names_line(tmp_path: Path) -> None:
    path = tmp_path / "suite.json"
    path.write_text('{\n  "dataset": ,\n}')
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    assert str(info.value) == (
        f"{path}:2: is not valid JSON: unexpected character, expected a JSON value (column 14)."
    )


def test_nan_threshold_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "suite.json"
    path.write_text(
        '{"dataset": {"prompts": [{"id": "a", "prompt": "x"}]}, '
        '"metrics": [{"type": "tool_use_parity", "threshold": NaN}]}'
    )
    with pytest.raises(SuiteError, match="NaN is not a number JSON allows"):
        load_suite(path)


def test_yaml_suite_and_invalid_yaml_line(tmp_path: Path) -> None:
    good = tmp_path / "s.yaml"
    good.write_text(
        "dataset:\n  prompts:\n    - id: a\n      prompt: Hi {g}\n"
        "      attributes: {g: [m, w]}\nmetrics:\n  - type: refusal_gap\n"
    )
    suite = load_suite(good)
    assert [v.prompt for v in suite.variants] == ["Hi m", "Hi w"]
    bad = tmp_path / "b.yml"
    bad.write_text("dataset:\n  prompts: [\n")
    with pytest.raises(SuiteError) as info:
        load_suite(bad)
    assert str(info.value).startswith(f"{bad}:3: is not valid YAML:")


def test_expansion_follows_fairtrace_order() -> None:
    suite = parse_suite(
        _prompts(
            {
                "id": "s",
                "prompt": "{gender} in {region}",
                "attributes": {"region": ["EU", "US"], "gender": ["man", "woman", "nb"]},
            },
            {"id": "plain", "prompt": "no attributes {{literal}}"},
        )
    )
    got = [(v.id, dict(v.assignments), v.prompt) for v in suite.variants]
    assert got[:3] == [
        ("s::1", {"gender": "man", "region": "EU"}, "man in EU"),
        ("s::2", {"gender": "man", "region": "US"}, "man in US"),
        ("s::3", {"gender": "woman", "region": "EU"}, "woman in EU"),
    ]
    assert got[5] == ("s::6", {"gender": "nb", "region": "US"}, "nb in US")
    assert got[6] == ("plain::base", {}, "no attributes {{literal}}")


def test_expansion_matches_installed_fairtrace() -> None:
    from fairtrace.dataset import DatasetBuilder

    prompts = [{"id": "s", "prompt": "{b} {a}", "attributes": {"b": ["1", "2"], "a": ["x", "y"]}}]
    theirs = DatasetBuilder.from_dicts(prompts).build()
    ours = parse_suite({"dataset": {"prompts": prompts}, "metrics": _GOOD_METRICS}).variants
    assert [(v.id, v.seed_id, v.prompt, dict(v.assignments)) for v in ours] == [
        (v.id, v.seed_id, v.prompt, v.assignments) for v in theirs
    ]


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_field_errors_carry_the_line_of_the_field(tmp_path: Path, suffix: str) -> None:
    data = {
        "dataset": {"prompts": [{"id": "a", "prompt": "x"}, {"id": "a", "prompt": "y"}]},
        "metrics": _GOOD_METRICS,
    }
    path = tmp_path / f"suite{suffix}"
    if suffix == ".yaml":
        import yaml

        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    else:
        path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    lines = path.read_text(encoding="utf-8").splitlines()
    expected = next(
        i
        for i, line in enumerate(lines, 1)
        if "id" in line
        and "a" in line
        and i
        > next(j for j, l2 in enumerate(lines, 1) if "prompt" in l2 and "y" not in l2 and "x" in l2)
    )
    with pytest.raises(SuiteError) as caught:
        load_suite(path)
    assert str(caught.value) == (
        f"{path}:{expected}: field 'dataset.prompts[1].id': duplicates "
        "the prompt id 'a'; ids must be unique."
    )
