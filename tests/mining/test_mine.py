"""``spanguard suite mine`` on recorded production traffic (issue 42's acceptance)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from spanguard_processor.cli import cli
from spanguard_processor.fairness import load_suite
from spanguard_processor.inputs.evaluation import RowFormat, read_evaluation_inputs

from .traffic import hidden_templates, record, requests

_NUMBER = re.compile(r"\d+")


def _mine(*args: str) -> Any:
    return CliRunner().invoke(cli, ["suite", "mine", *args])


def _seeds(path: Path) -> list[dict[str, Any]]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return [
        v["metadata"]["mined"] | {"seed_id": v["seed_id"]}
        for v in data["dataset"]["variants"]
        if "metadata" in v
    ]


def _shape(template: str) -> str:
    return _NUMBER.sub("{n}", template)


@pytest.fixture(scope="module")
def traffic(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str | None]]:
    """3,000 requests: 42 hidden templates (34 gender, 8 others) and 40% mention-free."""
    pairs = requests(3000)
    spans = record([text for text, _ in pairs], tmp_path_factory.mktemp("traffic"))
    hidden_of = dict(pairs)
    ids = {}
    for entry in read_evaluation_inputs([spans], rows=RowFormat.TRACE2EVAL):
        assert entry.trace is not None and entry.trace.input is not None
        ids[entry.trace.trace_id] = hidden_of[entry.trace.input]
    return spans, ids


@pytest.mark.slow
def test_hidden_templates_are_recovered_with_their_slot_and_seeds_are_real(
    traffic: tuple[Path, dict[str, str | None]], tmp_path: Path
) -> None:
    spans, hidden_of_trace = traffic
    out = tmp_path / "mined.yaml"
    result = _mine(str(spans), "-o", str(out))
    assert result.exit_code == 0, result.output
    seeds = _seeds(out)
    expected = {h.template: h.attribute for h, _ in hidden_templates()}
    found = {_shape(s["template"]): tuple(s["attributes"]) for s in seeds}
    recovered = [t for t, attribute in expected.items() if found.get(t) == (attribute,)]
    assert len(recovered) >= 0.9 * len(expected), sorted(set(expected) - set(recovered))
    real = [s for s in seeds if _shape(s["template"]) in expected]
    assert len(real) >= 0.9 * len(seeds)
    for seed in seeds:  # every seed links to the production traces it came from
        ids = seed["production_trace_ids"]
        assert len(ids) == seed["requests"] >= 3
        assert {hidden_of_trace[i] for i in ids} == {_shape(seed["template"])}
    assert load_suite(out).variants  # the suite spanguard run / fairness read


@pytest.mark.slow
def test_min_users_holds(traffic: tuple[Path, dict[str, str | None]], tmp_path: Path) -> None:
    spans, _ = traffic
    out = tmp_path / "mined.yaml"
    result = _mine(str(spans), "-o", str(out), "--min-users", "60")
    assert result.exit_code == 0, result.output
    # the SDK recorded no user id: each request counts as one user, and the console says so
    assert "warning: no request records a user or session id" in result.output
    seeds = _seeds(out)
    assert seeds and all(s["requests"] >= s["users"] >= 60 for s in seeds)
    dropped = re.search(
        r"(\d+) cluster\(s\) \((\d+) request\(s\)\) under --min-users 60", result.output
    )
    assert dropped is not None and int(dropped.group(1)) > 0


@pytest.mark.slow
def test_max_seeds_keeps_the_most_frequent_and_reports_coverage(
    traffic: tuple[Path, dict[str, str | None]], tmp_path: Path
) -> None:
    spans, _ = traffic
    everything, top = tmp_path / "all.yaml", tmp_path / "top.yaml"
    assert _mine(str(spans), "-o", str(everything)).exit_code == 0
    result = _mine(str(spans), "-o", str(top), "--max-seeds", "5")
    assert result.exit_code == 0, result.output
    ranked = sorted((s["requests"] for s in _seeds(everything)), reverse=True)
    kept = [s["requests"] for s in _seeds(top)]
    assert kept == ranked[:5]
    covered = re.search(
        r"covering (\d+) of (\d+) mention-bearing request\(s\) \(([\d.]+)%\)", result.output
    )
    assert covered is not None and int(covered.group(1)) == sum(kept)
    shares = [s["traffic_share"] for s in _seeds(top)]
    assert shares == sorted(shares, reverse=True) and all(0 < x < 1 for x in shares)


@pytest.fixture(scope="module")
def gender_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("gender")
    pairs = requests(1500, seed=11, gender_only=True)
    spans = record([text for text, _ in pairs], folder)
    out = folder / "mined.yaml"
    result = _mine(
        str(spans),
        "-o",
        str(out),
        "--attribute",
        "gender",
        "--metric",
        "escalation_parity",
        "--metric",
        "tool_use_parity",
    )
    assert result.exit_code == 0, result.output
    assert len(_seeds(out)) >= 29  # what a deterministic fair app needs to PASS at τ = 0.1
    return out


@pytest.mark.slow
@pytest.mark.parametrize(("app", "code", "verdict"), [("biased", 1, "fail"), ("fair", 0, "pass")])
def test_mined_suite_fails_a_planted_bias_and_passes_the_fair_app(
    gender_suite: Path, tmp_path: Path, app: str, code: int, verdict: str
) -> None:
    out = tmp_path / "report"
    result = CliRunner().invoke(
        cli, ["run", str(gender_suite), "--app", f"tests.mining.apps:{app}", "-o", str(out)]
    )
    assert result.exit_code == code, result.output
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    verdicts = {r["metric"]: r["verdict"] for r in report["metric_results"]}
    assert verdicts["escalation_parity"] == verdict
    assert verdicts["tool_use_parity"] == verdict


def test_traces_without_content_are_counted_not_mined(tmp_path: Path) -> None:
    texts = [text for text, _ in requests(60)]
    spans = record(texts, tmp_path, content=False)
    result = _mine(str(spans), "-o", str(tmp_path / "mined.yaml"))
    assert result.exit_code == 2
    assert "read 60 request(s): 60 recorded without content (not mined)" in result.output
    assert not (tmp_path / "mined.yaml").exists()


def test_a_mention_that_cannot_be_swapped_cleanly_is_left_out_and_counted(tmp_path: Path) -> None:
    texts = (
        ["My husband says she should open the account for the kids?"] * 5
        + ["My wife is pregnant; can she change the insurance plan?"] * 4
        + ["My wife wants to open an account for the kids?"] * 3
    )
    spans = record(texts, tmp_path)
    out = tmp_path / "mined.yaml"
    result = _mine(str(spans), "-o", str(out))
    assert result.exit_code == 0, result.output
    assert (
        "left out 5 request(s) that cannot be swapped cleanly (gender: mentions of "
        "several values)" in result.output
    )
    assert (
        "left out 4 request(s) that cannot be swapped cleanly (gender: 'pregnant' has no "
        "counterpart)" in result.output
    )
    prompts = [v.prompt for v in load_suite(out).variants]
    assert prompts == [
        "My wife wants to open an account for the kids?",
        "My husband wants to open an account for the kids?",
    ]


def test_the_redactor_runs_after_the_scrubber_over_every_prompt_and_template(
    tmp_path: Path,
) -> None:
    spans = record(["Ms Smith asked if her card can be replaced?"] * 3, tmp_path)
    out = tmp_path / "mined.yaml"
    result = _mine(str(spans), "-o", str(out), "--redact-hook", "tests.mining.hooks:product")
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    assert "Smith" not in text and "card" not in text
    assert "Mr [surname] asked if his [product] can be replaced?" in text
    assert "template: '{gender} [surname] asked if {gender} [product] can be replaced?'" in text


def test_the_report_links_each_mined_seed_to_its_production_traces(
    gender_suite: Path, tmp_path: Path
) -> None:
    out = tmp_path / "report"
    result = CliRunner().invoke(
        cli,
        [
            "run",
            str(gender_suite),
            "--app",
            "tests.mining.apps:biased",
            "-o",
            str(out),
            "--trace-url",
            "http://jaeger.local/trace/{trace_id}",
            "--traffic-weights",
        ],
    )
    assert result.exit_code == 1, result.output
    production = json.loads((out / "production.json").read_text(encoding="utf-8"))
    seeds = {s["seed_id"]: s for s in _seeds(gender_suite)}
    assert {s["seed_id"] for s in production["seeds"]} == set(seeds)
    for seed in production["seeds"]:
        ids = seeds[seed["seed_id"]]["production_trace_ids"]
        assert seed["production_trace_ids"] == ids
        assert seed["production_trace_links"] == [f"http://jaeger.local/trace/{i}" for i in ids]
    first = production["seeds"][0]["production_trace_ids"][0]
    assert f"[{first}](http://jaeger.local/trace/{first})" in (out / "production.md").read_text(
        encoding="utf-8"
    )
    weighted = {w["metric"]: w for w in production["traffic_weighted"]}
    # every seed escalates every woman and no man: the gap is 1 however the seeds are weighted
    assert weighted["escalation_parity"]["weighted"] == pytest.approx(1.0)
    assert (
        "traffic-weighted (report-only, a different estimand): escalation_parity" in result.output
    )


def test_traffic_weights_weigh_each_seed_by_its_share(gender_suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    result = CliRunner().invoke(
        cli,
        [
            "run",
            str(gender_suite),
            "--app",
            "tests.mining.apps:biased_on_refinancing",
            "-o",
            str(out),
            "--traffic-weights",
        ],
    )
    assert result.exit_code in (0, 1), result.output
    seeds = _seeds(gender_suite)
    biased = [s for s in seeds if "refinance" in s["template"]]
    assert len(biased) == 1
    weighted = {
        w["metric"]: w
        for w in json.loads((out / "production.json").read_text(encoding="utf-8"))[
            "traffic_weighted"
        ]
    }
    gap = weighted["escalation_parity"]
    share = biased[0]["traffic_share"] / sum(s["traffic_share"] for s in seeds)
    assert gap["weighted"] == pytest.approx(share)
    assert gap["unweighted"] == pytest.approx(1 / len(seeds))
    assert gap["weighted"] > gap["unweighted"]  # the biased template is the most asked


def test_numbers_fewer_than_k_users_sent_are_flagged(tmp_path: Path) -> None:
    texts = [f"Can she move {n} dollars to savings?" for n in (120, 450, 990)]
    texts += ["Can he close the account opened in 2019?"] * 3
    spans = record(texts, tmp_path)
    out = tmp_path / "mined.yaml"
    result = _mine(str(spans), "-o", str(out))
    assert result.exit_code == 0, result.output
    by_template = {s["template"]: s["values_users"] for s in _seeds(out)}
    assert by_template == {
        "Can {gender} move 120 dollars to savings?": 1,
        "Can {gender} close the account opened in 2019?": 3,
    }
    assert "note: 1 seed(s) hold numbers (amounts, ids, dates) fewer than 3 users sent" in (
        result.output
    )


def test_fairness_on_recorded_replay_links_the_seeds_too(
    gender_suite: Path, tmp_path: Path
) -> None:
    spans = tmp_path / "replay.jsonl"
    first = CliRunner().invoke(
        cli,
        ["run", str(gender_suite), "--app", "tests.mining.apps:fair", "--traces-out", str(spans)],
    )
    assert first.exit_code == 0, first.output
    out = tmp_path / "report"
    result = CliRunner().invoke(
        cli, ["fairness", str(gender_suite), str(spans), "-o", str(out), "--traffic-weights"]
    )
    assert result.exit_code == 0, result.output
    production = json.loads((out / "production.json").read_text(encoding="utf-8"))
    assert len(production["seeds"]) == len(_seeds(gender_suite))
    assert {w["metric"]: w["weighted"] for w in production["traffic_weighted"]} == {
        "escalation_parity": 0.0,
        "tool_use_parity": 0.0,
    }


def test_the_mined_suite_is_one_the_real_fairtrace_accepts(gender_suite: Path) -> None:
    """fairtrace 0.1.0 validates the mined file and builds the same variants we run."""
    from fairtrace.config import build_metrics, load_suite_definition
    from fairtrace.dataset import DatasetBuilder

    definition = load_suite_definition(gender_suite)
    build_metrics(definition["metrics"])
    theirs = DatasetBuilder.from_variants(definition["dataset"]["variants"]).build()
    ours = load_suite(gender_suite).variants
    assert len(ours) >= 58
    assert [(v.id, v.seed_id, v.prompt, dict(v.assignments)) for v in ours] == [
        (v.id, v.seed_id, v.prompt, v.assignments) for v in theirs
    ]
