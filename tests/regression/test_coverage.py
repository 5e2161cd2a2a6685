"""Regression cases cover the traffic, not only its signals; a missing case is not a pass.

Issue 36, items 8 and 9: 5 recorded requests over 3 questions gave 1 case (picked by a
"0ms above p95 0ms" timing signal), so a version refusing the other questions passed `check`;
64 templated loan applications gave 2 cases, so most process paths were never checked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

import spanguard
from spanguard.testing import SpanCapture
from spanguard_processor.cli import cli
from spanguard_processor.traces.convert import traces_from_readable_spans

from .loan_agent import LoanAgent, applications, serve

QUESTIONS = (
    "How do I reset my password?",
    "What are your opening hours on weekends?",
    "Can I change the delivery address of an order?",
)
ANSWERS = (
    "Open Settings, choose Security and press 'Reset password'; we e-mail you a link.",
    "We are open from 10:00 to 16:00 on Saturdays and closed on Sundays.",
    "Yes, until the parcel ships: open the order and press 'Change address'.",
)
REFUSAL = "I'm sorry, but I can't help with that."
#: 5 requests over 3 questions: the first two asked twice.
TRAFFIC = (0, 1, 0, 2, 1)


def _faq_traffic(refuse: int | None = None) -> list[dict[str, Any]]:
    """The FAQ app served in-process (real SDK, real clock: each request takes well under a
    millisecond); with ``refuse`` it refuses that question."""
    with SpanCapture(capture_content=True) as capture:
        for number, question in enumerate(TRAFFIC):
            with spanguard.request(
                "faq", request_id=f"faq-{number}", input=QUESTIONS[question]
            ) as req:
                req.set_output(REFUSAL if question == refuse else ANSWERS[question])
    return [t.to_dict() for t in traces_from_readable_spans(capture.readable_spans())]


def _write(path: Path, traces: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in traces), encoding="utf-8")
    return path


def _cli(*args: object) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args])


def _cases(folder: Path) -> list[dict[str, Any]]:
    text = (folder / "cases.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def _score(folder: Path, name: str, traces: list[dict[str, Any]]) -> Path:
    log = _write(folder / f"{name}.jsonl", traces)
    result = _cli(
        "cases",
        "run",
        "--cases",
        folder / "ev" / "cases.jsonl",
        "--traces",
        log,
        "-o",
        folder / f"{name}.json",
    )
    assert result.exit_code == 0, result.output
    return folder / f"{name}.json"


def _check(folder: Path, current: Path, *extra: str) -> Any:
    return _cli(
        "check",
        "--rules",
        "trace2eval",
        "--baseline",
        folder / "baseline.json",
        "--current",
        current,
        *extra,
    )


def test_every_question_gets_a_case_and_a_refusal_of_any_of_them_fails_check(
    tmp_path: Path,
) -> None:
    log = _write(tmp_path / "traffic.jsonl", _faq_traffic())
    built = _cli("cases", "build", log, "-o", tmp_path / "ev")
    assert built.exit_code == 0, built.output
    cases = _cases(tmp_path / "ev")
    assert sorted(c["input"] for c in cases) == sorted(QUESTIONS)
    assert "coverage: 3 of 3 question(s) (100%), 5 of 5 request(s) (100%)" in built.output
    report = (tmp_path / "ev" / "report.md").read_text(encoding="utf-8")
    assert "| Questions covered by a case | 3 of 3 (100.0%) |" in report
    assert "| Requests covered by a case | 5 of 5 (100.0%) |" in report
    # A sub-millisecond request is not "slow": no "0ms above p95 0ms" signal.
    assert not any(s["name"] == "slow_response" for c in cases for s in c["signals"])
    _score(tmp_path, "baseline", _faq_traffic())
    assert _check(tmp_path, _score(tmp_path, "same", _faq_traffic())).exit_code == 0
    for question in range(len(QUESTIONS)):
        refusing = _score(tmp_path, f"refuses{question}", _faq_traffic(refuse=question))
        gate = _check(tmp_path, refusing)
        assert gate.exit_code == 1, (question, gate.output)
        assert "FAIL: 1 case(s) regressed" in gate.stderr


def test_signal_only_selection_stays_available(tmp_path: Path) -> None:
    log = _write(tmp_path / "traffic.jsonl", _faq_traffic())
    built = _cli("cases", "build", log, "-o", tmp_path / "ev", "--select", "signals")
    assert built.exit_code == 0, built.output
    assert _cases(tmp_path / "ev") == []  # nothing went wrong in this traffic
    assert "coverage: 0 of 3 question(s) (0%), 0 of 5 request(s) (0%)" in built.output


def test_a_case_limit_below_the_questions_says_what_is_left_uncovered(tmp_path: Path) -> None:
    log = _write(tmp_path / "traffic.jsonl", _faq_traffic())
    built = _cli("cases", "build", log, "-o", tmp_path / "ev", "--max-cases", "2")
    assert built.exit_code == 0, built.output
    cases = _cases(tmp_path / "ev")
    # the two questions asked twice are kept: they cover the most traffic
    assert sorted(c["input"] for c in cases) == sorted(QUESTIONS[:2])
    assert "coverage: 2 of 3 question(s) (67%), 4 of 5 request(s) (80%)" in built.output
    assert "  1 beyond the case limit" in built.output


def test_64_loan_applications_give_a_case_per_process_path(tmp_path: Path) -> None:
    apps = applications(64, seed=3)
    # No request carries an expect block or any other failure signal.
    log = _write(tmp_path / "traffic.jsonl", serve(apps, jitter_seed=11, expect=False))
    built = _cli("cases", "build", log, "-o", tmp_path / "ev")
    assert built.exit_code == 0, built.output
    cases = _cases(tmp_path / "ev")
    assert len(cases) >= 8, built.output
    decide = LoanAgent(lambda ms: None, 0).decide
    paths = {a.prompt: (a.template, decide(a)) for a in apps}
    assert {paths[c["input"]] for c in cases} == set(paths.values())  # 3 templates × 3 outcomes
    assert "coverage: " in built.output and "64 of 64 request(s) (100%)" in built.output
    _score(tmp_path, "baseline", serve(apps, jitter_seed=11, expect=False))
    unchanged = _score(tmp_path, "unchanged", serve(apps, jitter_seed=12, expect=False))
    assert _check(tmp_path, unchanged).exit_code == 0
    no_bureau = _score(
        tmp_path, "no_bureau", serve(apps, jitter_seed=12, change="no_bureau", expect=False)
    )
    gate = _check(tmp_path, no_bureau)
    assert gate.exit_code == 1, gate.output
    assert f"FAIL: {len(cases)} case(s) regressed" in gate.stderr
    # trace2eval's selection keeps only the signalled clusters: far fewer paths checked
    signals = _cli("cases", "build", log, "-o", tmp_path / "ev_signals", "--select", "signals")
    assert signals.exit_code == 0
    assert len(_cases(tmp_path / "ev_signals")) < len(cases)


def test_cases_run_prints_the_cases_without_a_record(tmp_path: Path) -> None:
    log = _write(tmp_path / "traffic.jsonl", _faq_traffic())
    assert _cli("cases", "build", log, "-o", tmp_path / "ev").exit_code == 0
    partial = [t for t in _faq_traffic() if t["input"] != QUESTIONS[2]]
    result = _cli(
        "cases",
        "run",
        "--cases",
        tmp_path / "ev" / "cases.jsonl",
        "--traces",
        _write(tmp_path / "partial.jsonl", partial),
        "-o",
        tmp_path / "partial.json",
    )
    assert result.exit_code == 0, result.output
    (missing,) = [c["id"] for c in _cases(tmp_path / "ev") if c["input"] == QUESTIONS[2]]
    assert "; 1 without output" in result.output
    assert (
        f"1 case(s) without a record, counted as failed (a missing case is not a pass): "
        f"{missing}\n" in result.output
    )


def test_a_refusal_is_its_own_path_of_the_question(tmp_path: Path) -> None:
    rows = [{"id": f"r{i}", "input": QUESTIONS[0], "output": ANSWERS[0]} for i in range(3)]
    rows.append({"id": "r3", "input": QUESTIONS[0], "output": REFUSAL})
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    built = _cli("cases", "build", log, "-o", tmp_path / "ev")
    assert built.exit_code == 0, built.output
    cases = _cases(tmp_path / "ev")
    # the refusal (a failure seed, checked against the clean answers) and the answered path
    assert [
        (c["source_trace_id"], c["occurrences_in_log"], c["reference_is_trusted"]) for c in cases
    ] == [("r3", 1, False), ("r0", 3, True)]
    assert "1 cluster(s) of near-duplicate questions split by process" in built.output
