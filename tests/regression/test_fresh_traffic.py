"""Recorded traffic of another day that does not repeat day 1's questions (issue 46, task day2).

Measured on main d048054 (/work/notes/shape_trial.py, a support agent with an order number in
every question): ``cases build`` on day 1 gave 6 cases; ``cases run --traces`` on day 2, new
traffic with other order numbers, matched **0 of 6** (records were found by case id,
``source_trace_id``, then exact folded question), and ``check`` FAILed ``missing`` for an
unchanged agent in 3 of 3 trials. Each test below reproduces a part of that, in-process.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from spanguard_processor.regression.case import Case
from spanguard_processor.regression.gate.runfile import run_file
from spanguard_processor.regression.gate.verdict import MetricOutcome, decide
from spanguard_processor.regression.mine.build import BuildOptions, build_evalset
from spanguard_processor.regression.outcome import classify_answer
from spanguard_processor.regression.run.outputs import outputs_from_traces
from spanguard_processor.regression.run.repeats import request_key
from spanguard_processor.regression.run.run import RunResult, load_cases, run_cases

from .loan_agent import applications
from .stochastic_loan import serve
from .support_agent import DROP_LOOKUP, QUESTIONS, SupportAgent, questions


def _log(folder: Path, name: str, traces: list[dict[str, Any]]) -> Path:
    path = folder / f"{name}.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in traces), encoding="utf-8")
    return path


def _support(
    folder: Path, day2: list[str], change: str | None = None
) -> tuple[list[Case], RunResult, RunResult]:
    """Cases from 60 day-1 requests (10 per question); day 1 and ``day2`` scored."""
    log1 = _log(folder, "day1", SupportAgent(1).serve(questions(60, seed=1), "d1"))
    build_evalset([log1], BuildOptions(out=folder / "ev"))
    cases = load_cases(folder / "ev" / "cases.jsonl")
    log2 = _log(folder, "day2", SupportAgent(2, change).serve(day2, "d2"))
    return (
        cases,
        run_cases(cases, outputs_from_traces([log1])),
        run_cases(cases, outputs_from_traces([log2])),
    )


def test_fresh_traffic_reaches_every_case_through_its_template(tmp_path: Path) -> None:
    cases, day1, day2 = _support(tmp_path, questions(60, seed=2))
    assert len(cases) == 6
    # day 1: every request found exactly, as before (the cluster's own trace ids)
    assert day1.matching["unmatched"] == 0
    assert all(len(day1.repeats[c.id]) == 10 for c in cases)
    # day 2 asks the same six questions about other orders: each case gets its ten
    assert day2.matching["unmatched"] == 0, day2.matching
    assert [len(day2.repeats[c.id]) for c in cases] == [10] * 6
    assert {c.id: day2.requests[c.id] for c in cases} == {
        c.id: {"exact": 0, "template": 10} for c in cases
    }
    payload = json.loads(day2.to_json())
    assert payload["requests"][cases[0].id] == {"exact": 0, "template": 10}
    assert payload["matching"]["template"] == 6


def test_an_unchanged_agent_on_fresh_traffic_is_not_failed_for_missing_cases(
    tmp_path: Path,
) -> None:
    _, day1, day2 = _support(tmp_path, questions(60, seed=2))
    verdict = decide(run_file(day1, "day1.json"), run_file(day2, "day2.json"))
    failed = [m.metric for m in verdict.metrics if m.gating and m.outcome is MetricOutcome.FAIL]
    assert failed == []


def test_a_case_recorded_traffic_does_not_reach_is_no_signal_not_a_failure(
    tmp_path: Path,
) -> None:
    # day 2 never asks the last question: no evidence about that case either way
    asked = [q for q in questions(60, seed=2) if not q.startswith("Cancel order")]
    cases, day1, day2 = _support(tmp_path, asked)
    silent = [c.id for c in cases if (c.input or "").startswith("Cancel order")]
    assert len(silent) == 1 and not day2.repeats[silent[0]]
    verdict = decide(run_file(day1, "day1.json"), run_file(day2, "day2.json"))
    (missing,) = [m for m in verdict.metrics if m.metric == "missing"]
    assert missing.outcome is MetricOutcome.NO_SIGNAL and not missing.gating
    assert "1 case(s) had no request in the current traffic" in missing.note
    assert missing.evidence == (f"{silent[0]}: 10 request(s) in the baseline, 0 now",)
    # in replay every case is called: a case with no run there still fails (the app produced
    # nothing), as before
    unkeyed = {k: tuple(replace(r, request=None) for r in v) for k, v in day1.repeats.items()}
    base = replace(run_file(day1, "day1.json"), repeats=unkeyed)
    cur_repeats = {k: tuple(replace(r, request=None) for r in v) for k, v in day2.repeats.items()}
    cur = replace(run_file(day2, "day2.json"), repeats=cur_repeats)
    (replayed,) = [m for m in decide(base, cur).metrics if m.metric == "missing"]
    assert replayed.outcome is MetricOutcome.FAIL and replayed.gating


def test_a_dropped_tool_still_fails_on_fresh_traffic(tmp_path: Path) -> None:
    cases, day1, day2 = _support(tmp_path, questions(60, seed=2), change=DROP_LOOKUP)
    verdict = decide(run_file(day1, "day1.json"), run_file(day2, "day2.json"))
    returns = next(c.id for c in cases if (c.input or "").startswith("Can I return"))
    assert not verdict.passed
    assert verdict.changes and verdict.changes[0].case_id == returns
    assert "lookup_order" in verdict.changes[0].diff


def test_fresh_applications_go_to_the_case_of_their_outcome_path(tmp_path: Path) -> None:
    """Cases split one template by a slot range (amount over income decides approve, refer,
    decline; income decides the tool path): a new application reaches the case whose path its
    values fall in, so every request a case gets answers as the case's path does."""
    log1 = _log(tmp_path, "day1", serve(applications(120, seed=1), seed=11)[0])
    build_evalset([log1], BuildOptions(out=tmp_path / "ev"))
    cases = load_cases(tmp_path / "ev" / "cases.jsonl")
    split = [c for c in cases if c.match is not None and c.match.when]
    assert len(split) >= 6
    traces = serve(applications(120, seed=2), seed=12)[0]
    fresh = [{**t, "request_id": f"fresh-{i}"} for i, t in enumerate(traces)]
    outputs = outputs_from_traces([_log(tmp_path, "day2", fresh)])
    run = run_cases(cases, outputs)
    matched = sum(run.requests[c.id]["template"] for c in cases)
    # a few fall between two cases' ranges, or have features that moved together on day 1 but
    # disagree now (task route: 12 of 120 here, so 108): they go to neither
    assert matched >= 105
    answer = {request_key(t["input"]): classify_answer(t["output"]) for t in fresh}
    wrong: Counter[str] = Counter()
    for case in cases:
        own = classify_answer(case.reference_output)
        for repeat in run.repeats[case.id]:
            wrong[case.id] += answer[repeat.request] != own
    assert sum(wrong.values()) == 0, wrong
    assert "went to neither" in " ".join(run.notes) or matched == 120


def test_a_case_file_without_match_keeps_todays_matching(tmp_path: Path) -> None:
    cases, _, _ = _support(tmp_path, questions(60, seed=2))
    old = [replace(c, match=None) for c in cases]
    log2 = _log(tmp_path, "old2", SupportAgent(2).serve(questions(60, seed=2), "d2"))
    run = run_cases(old, outputs_from_traces([log2]))
    assert run.matching["unmatched"] == 6
    assert "requests" not in json.loads(run.to_json())
    assert QUESTIONS  # the six questions the cases ask


def test_cases_run_prints_how_requests_were_matched_and_what_it_could_not_place(
    tmp_path: Path,
) -> None:
    from click.testing import CliRunner

    from spanguard_processor.cli import cli

    log1 = _log(tmp_path, "day1", SupportAgent(1).serve(questions(60, seed=1), "d1"))
    # day 2 adds a question no case's template aligns with
    asked = [*questions(12, seed=2), "Please refund order 1234 today"]
    log2 = _log(tmp_path, "day2", SupportAgent(2).serve(asked, "d2"))
    runner = CliRunner()
    built = runner.invoke(cli, ["cases", "build", str(log1), "-o", str(tmp_path / "ev")])
    assert built.exit_code == 0, built.output
    cases = str(tmp_path / "ev" / "cases.jsonl")
    out = tmp_path / "run.json"
    ran = runner.invoke(
        cli, ["cases", "run", "--cases", cases, "--traces", str(log2), "-o", str(out)]
    )
    assert ran.exit_code == 0, ran.output
    assert "6 by template (another day's requests); 0 without output" in ran.output
    assert "requests: 0 matched exactly, 12 by template and input range" in ran.output
    assert json.loads(out.read_text())["notes"] == [
        "1 request(s) matched no case by id, source_trace_id, question or template; "
        "first: 'Please refund order 1234 today'"
    ]


def test_a_malformed_match_is_bad_input_naming_file_line_and_field(tmp_path: Path) -> None:
    import pytest

    from spanguard.exceptions import CaseFormatError

    path = tmp_path / "cases.jsonl"
    good = {"id": "case-1", "input": "Where is my order 1?", "checks": []}
    bad = {**good, "id": "case-2", "match": {"template": "Where is my order #?", "when": [7]}}
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(CaseFormatError) as error:
        load_cases(path)
    assert f"{path.as_posix()}:2" in str(error.value)
    assert "field 'match'" in str(error.value)


def test_one_request_both_days_asked_does_not_reduce_a_case_to_that_pair(tmp_path: Path) -> None:
    """bench_regression_e2e --designs support (240 a day, 100 trials): a dropped tool was
    INCONCLUSIVE in 11 trials. Day 2 asked one returns question about the same order number
    as day 1 (order numbers 1000–9999, 40 a day), so the case's requests were "paired" by that
    one input and compared 1/1 → 0/1, its other 39 requests left out."""
    day1 = questions(60, seed=1)
    again = next(q for q in day1 if q.startswith("Can I return"))
    day2 = questions(60, seed=2)
    first = next(i for i, q in enumerate(day2) if q.startswith("Can I return"))
    day2[first] = again
    cases, base, cur = _support(tmp_path, day2, change=DROP_LOOKUP)
    returns = next(c.id for c in cases if (c.input or "").startswith("Can I return"))
    assert base.requests[returns]["exact"] == 10 and len(cur.repeats[returns]) == 10
    verdict = decide(run_file(base, "day1.json"), run_file(cur, "day2.json"))
    (tool,) = [m for m in verdict.metrics if m.metric == "tool use: lookup_order"]
    assert tool.outcome is MetricOutcome.FAIL, tool.evidence
    assert tool.evidence[0].startswith(f"{returns} missing lookup_order in 10/10")


def test_a_request_goes_to_the_path_its_values_fall_in_and_to_neither_of_two() -> None:
    from spanguard_processor.regression.case import Evidence
    from spanguard_processor.regression.casematch import CaseMatch, Condition
    from spanguard_processor.regression.run.outputs import OutputRecord
    from spanguard_processor.regression.run.templated import assign_by_template

    template = "I earn # and want to borrow #"
    ratio = {"slot": 1, "over": 0}  # amount over income
    refer = Condition(**ratio, low=0.45, high=0.55, above=0.25, below=0.8)
    decline = Condition(**ratio, low=0.8, high=1.2, above=0.55, below=None)
    cases = [
        Case("approve", "I earn 100 and want to borrow 20", match=CaseMatch(template)),
        Case("refer", "I earn 100 and want to borrow 50", match=CaseMatch(template, (refer,))),
        Case("decline", "I earn 100 and want to borrow 90", match=CaseMatch(template, (decline,))),
        Case("other", "Cancel order 12 please", match=CaseMatch("Cancel order # please")),
    ]
    asks = {
        "I earn 1,000 and want to borrow 150": "approve",  # no range holds: the main path
        "I earn 1,000 and want to borrow 500": "refer",
        "I earn 1,000 and want to borrow 2,000": "decline",
        "I earn 1,000 and want to borrow 700": None,  # in both ranges' gap: neither
        "Cancel order 99 please": "other",
        "Where is my parcel": None,  # no template
    }
    records = [OutputRecord(Evidence("ok"), text) for text in asks]
    found = assign_by_template(cases, records)
    placed = {r.input: case for case, rs in found.by_case.items() for r in rs}
    assert placed == {text: case for text, case in asks.items() if case is not None}
    assert found.ambiguous == ("I earn 1,000 and want to borrow 700",)
    assert found.unmatched == ("Where is my parcel",)
    # the conditions survive the case file
    again = Case.from_dict(json.loads(json.dumps(cases[2].to_dict())))
    assert again.match == cases[2].match


def _moving_together(folder: Path) -> list[Case]:
    """Cases of 23 declined applications whose amount equals their income (the two move
    together on day 1); earning at least 100,000 adds ``verify_income`` (11 of them)."""
    from .loan_agent import Application

    apps = [
        Application(f"d1-{i}", 0, f"Please lend me {n} USD; my annual income is {n} USD.", "", n, n)
        for i, n in enumerate(range(40_000, 155_000, 5_000))
    ]
    build_evalset([_log(folder, "day1", serve(apps, seed=1)[0])], BuildOptions(out=folder / "ev"))
    return load_cases(folder / "ev" / "cases.jsonl")


def test_a_path_two_features_separate_takes_a_request_only_when_both_agree(
    tmp_path: Path,
) -> None:
    """bench_regression_e2e --designs fresh, seed 9: the high-income path (verify_income) was
    split off by the loan amount, which moved with the income within day 1's declines; new
    applications with a large amount and a small income reached that case without calling
    verify_income ("calls verify_income 11/11 -> 10/16")."""
    from spanguard_processor.regression.case import Evidence
    from spanguard_processor.regression.run.outputs import OutputRecord
    from spanguard_processor.regression.run.templated import assign_by_template

    cases = _moving_together(tmp_path)
    (verify,) = [c for c in cases if c.match and any(c.match.when)]
    (level,) = [c for c in verify.match.when if c is not None] if verify.match else []
    # the chosen feature first (the amount, slot 0), the income (slot 1) stored beside it
    assert (level.slot, level.above, level.low) == (0, 95_000, 100_000)
    assert [(c.slot, c.above, c.low) for c in level.also] == [(1, 95_000, 100_000)]
    asks = {
        "Please lend me 140000 USD; my annual income is 140000 USD.": verify.id,
        "Please lend me 130000 USD; my annual income is 80000 USD.": None,  # amount only
        "Please lend me 60000 USD; my annual income is 120000 USD.": None,  # income only
    }
    records = [OutputRecord(Evidence("ok"), text) for text in asks]
    found = assign_by_template(cases, records)
    placed = {r.input: case for case, rs in found.by_case.items() for r in rs}
    assert placed == {text: case for text, case in asks.items() if case is not None}
    assert len(found.ambiguous) == 2 and "went to neither" in found.notes()[0]
    # the second feature survives the case file
    again = Case.from_dict(json.loads(json.dumps(verify.to_dict())))
    assert again.match == verify.match


def test_a_malformed_also_is_bad_input_naming_file_line_and_field(tmp_path: Path) -> None:
    import pytest

    from spanguard.exceptions import CaseFormatError

    path = tmp_path / "cases.jsonl"
    when = [{"slot": 0, "low": 1.0, "high": 2.0, "above": None, "below": 3.0, "also": [7]}]
    bad = {"id": "case-1", "input": "Lend me 1", "match": {"template": "Lend me #", "when": when}}
    path.write_text(json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(CaseFormatError) as error:
        load_cases(path)
    assert f"{path.as_posix()}:1" in str(error.value) and "field 'match'" in str(error.value)
