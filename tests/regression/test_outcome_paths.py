"""Issue 46, build side: cases carry their cluster's distribution, and a question splits into
its outcome paths.

Measured on main 6f384b9: a loan agent with 4 % random escalations got cases asserting
``escalated: true`` for its random escalations; a one-off tool retry was baked into a case's
``tool_sequence``; 64 templated applications whose approve and decline share a process path
gave one case per process path, not per outcome.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from spanguard_processor.cli import cli
from spanguard_processor.common.jsonio import write_jsonl
from spanguard_processor.regression.case import Case, Check, Evidence
from spanguard_processor.regression.checks import check_type
from spanguard_processor.regression.mine.loader import load_logs
from spanguard_processor.regression.outcome import classify_answer
from spanguard_processor.traces.model import AgentTrace, ProcessTrace, ToolCall

from .conftest import run
from .loan_agent import Application, applications
from .stochastic_loan import decide, serve, tool_path

T2E = [sys.executable, "-m", "trace2eval"]


def _build(tmp_path: Path, traces: list[dict[str, Any]]) -> tuple[Any, list[dict[str, Any]]]:
    log = tmp_path / "traffic.jsonl"
    log.write_text("".join(json.dumps(t) + "\n" for t in traces), encoding="utf-8")
    built = CliRunner().invoke(cli, ["cases", "build", str(log), "-o", str(tmp_path / "ev")])
    assert built.exit_code == 0, built.output
    text = (tmp_path / "ev" / "cases.jsonl").read_text(encoding="utf-8")
    return built, [json.loads(line) for line in text.splitlines()]


@pytest.fixture(scope="module")
def noisy(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """240 applications served by an agent that approves or declines, and escalates 4 % of
    requests at random, and retries 3 % of its credit checks."""
    apps = applications(240, seed=4)
    traces, outcomes = serve(apps, seed=6, escalate_rate=0.04, retry_rate=0.03, refer=False)
    folder = tmp_path_factory.mktemp("noisy")
    built, cases = _build(folder, traces)
    return {"apps": apps, "outcomes": outcomes, "cases": cases, "built": built, "dir": folder}


def _by_prompt(apps: list[Application]) -> dict[str, Application]:
    return {a.prompt: a for a in apps}


def test_random_escalations_are_a_rate_never_a_case_asserting_them(noisy: dict[str, Any]) -> None:
    apps, outcomes = _by_prompt(noisy["apps"]), noisy["outcomes"]
    random = [a for a in noisy["apps"] if outcomes[a.request_id] == "escalate"]
    assert len(random) >= 5
    for case in noisy["cases"]:
        rep = apps[case["input"]]
        # every representative took its systematic path: replaying it reproduces the path
        assert outcomes[rep.request_id] == decide(rep, refer=False), case["id"]
        assert {"type": "escalated", "value": True} not in case.get("trace_checks", [])
    rates = [
        p
        for case in noisy["cases"]
        for p in case["properties"]
        if p["check"]["type"] == "escalated" and not p["stable"]
    ]
    # a cluster that showed the random escalation has it as a rate; one that happened to show
    # none is too small to tell "never" from the log's rate: a rate too (held every time)
    assert rates and any(0 < p["held"] < p["of"] for p in rates)
    share = len(random) / len(noisy["apps"])
    lucky = [p for p in rates if p["held"] == p["of"]]
    assert lucky and all((1 - share) ** p["of"] > 0.05 for p in lucky)
    assert all(p not in case.get("trace_checks", []) for case in noisy["cases"] for p in rates)


def test_every_stable_property_holds_on_the_traffic_it_came_from(noisy: dict[str, Any]) -> None:
    loaded = load_logs([noisy["dir"] / "traffic.jsonl"], 10**7)
    evidence = {row.id: row.evidence for row in loaded.rows}
    checked, kinds = 0, set()
    for data in noisy["cases"]:
        case = Case.from_dict(data)
        asserted = [*case.checks, *case.trace_checks]
        runs = [evidence[i] for i in (case.source_trace_id, *case.duplicate_trace_ids)]
        for prop in case.properties:
            assert (prop.check in asserted) == prop.stable, (case.id, prop)
            if prop.stable:
                checked, kinds = checked + 1, kinds | {prop.check.type}
                ct = check_type(prop.check.type)
                assert ct is not None
                results = [ct.run(ct, prop.check, e).passed for e in runs]
                assert False not in results, (case.id, prop.check)
    # Since the stable rule (task recstable) escalation, friction and the answer class are rates
    # in clusters this small (the log shows them varying at ~4 %: stable needs n >= 74), so
    # what stays asserted is each case's text checks and the tools the log never saw missed —
    # 37 properties over 12 cases on this traffic (it was 40+ before that rule).
    assert checked >= 3 * len(noisy["cases"])
    assert {"not_fallback", "min_chars", "tools_include", "tool_sequence"} <= kinds


def _agent(n: int, text: str, tools: tuple[str, ...]) -> dict[str, Any]:
    return AgentTrace(
        trace_id=f"{n:032x}",
        request_id=f"req-{n}",
        input=text,
        output="Your order ships on Monday; the tracking link is in your e-mail.",
        latency_ms=500.0,
        trace=ProcessTrace(tool_calls=tuple(ToolCall(t) for t in tools)),
    ).to_dict()


def test_a_one_off_retry_is_a_rate_not_part_of_the_tool_sequence(tmp_path: Path) -> None:
    once = "When does my order 77 ship, and where can I track it?"
    often = "Can I still change the delivery address of my parcel?"
    traces = [_agent(1, once, ("lookup", "lookup", "track"))]  # its only request retried
    traces += [_agent(10 + i, often, ("lookup", "track")) for i in range(9)]
    traces.append(_agent(30, often, ("lookup", "lookup", "track")))
    _, cases = _build(tmp_path, traces)
    by_input = {c["input"]: c for c in cases}
    assert len(cases) == 2
    for text, retried in ((once, 1), (often, 1)):
        case = by_input[text]
        assert {"type": "tool_sequence", "value": ["lookup", "track"]} in case["trace_checks"]
        (retries,) = [p for p in case["properties"] if p["check"]["type"] == "max_tool_retries"]
        assert retries["stable"] is False
        assert retries["of"] - retries["held"] == retried
        assert retries["check"] not in case["trace_checks"]


def test_64_templated_applications_give_a_case_per_template_outcome_and_path(
    tmp_path: Path,
) -> None:
    apps = applications(64, seed=0)
    traces, _ = serve(apps, seed=100)
    built, cases = _build(tmp_path, traces)
    triple = {a.prompt: (a.template, decide(a), tool_path(a)) for a in apps}
    occurring = Counter(triple.values())
    covered = {triple[c["input"]] for c in cases}
    assert len(cases) >= 8
    assert {t for t, n in occurring.items() if n >= 3} <= covered
    assert all(
        classify_answer(c["reference_output"]) in {"approve", "decline", "refer"} for c in cases
    )
    # a case per path, plus a case for a wording variant that represented no path of its own
    (line,) = [line for line in built.output.splitlines() if line.startswith("  paths: ")]
    variants = int(line.split(", ")[1].split()[0])
    cased = int(line.split("; ")[1].split()[0])
    assert cased + variants == len(cases), line
    report = (tmp_path / "ev" / "report.md").read_text(encoding="utf-8")
    assert "## Outcome paths, stable properties and rates" in report
    assert "| approve · credit_check+verify_income · not escalated" in report


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("Approved: we can lend you 5000 USD.", "approve"),
        ("We are sorry: a loan of 9000 USD is too high.", "decline"),
        ("Your application has been passed to an underwriter.", "refer"),
        ('{"decision": "Declined", "reason": "income"}', "decline"),
        ('{"status": "pending"}', "pending"),
        ('{"answer": 42}', "structured"),
        ("I'm sorry, but I can't help with that.", "refusal"),
        ("Open Settings and press Reset password.", "text"),
        ("   ", "empty"),
    ],
)
def test_the_answer_class_is_read_from_the_answer_text(output: str, expected: str) -> None:
    assert classify_answer(output) == expected


def test_properties_round_trip_and_trace2eval_still_runs_the_cases(tmp_path: Path) -> None:
    apps = applications(30, seed=2)
    traces, _ = serve(apps, seed=9, escalate_rate=0.1)
    _, cases = _build(tmp_path, traces)
    assert all(Case.from_dict(c).to_dict() == c for c in cases)
    assert Case.from_dict(cases[0]).properties[0].check == Check.from_dict(cases[0]["checks"][0])
    outputs = tmp_path / "outputs.jsonl"
    write_jsonl(outputs, [{"id": c["id"], "output": c["reference_output"]} for c in cases])
    theirs = run(
        [*T2E, "run", "--cases", "ev/cases.jsonl", "--outputs", "outputs.jsonl", "-o", "t2e.json"],
        tmp_path,
    )
    assert theirs.returncode == 0, theirs.stderr
    metrics = json.loads((tmp_path / "t2e.json").read_text())["metrics"]
    assert (metrics["total"], metrics["pass_rate"]) == (len(cases), 1.0)


def test_a_rate_never_fails_a_run_that_lacks_it() -> None:
    """The retry kind reads the process; a run without one leaves it unverified."""
    ct = check_type("max_tool_retries")
    assert ct is not None
    check = Check.of("max_tool_retries", value=0)
    assert ct.run(ct, check, Evidence("ok")).passed is None
    retried = ProcessTrace(tool_calls=(ToolCall("a"), ToolCall("a"), ToolCall("b")))
    assert ct.run(ct, check, Evidence("ok", retried)).passed is False


def test_a_path_the_input_cannot_explain_is_a_rate_however_often(tmp_path: Path) -> None:
    """One question asked 30 times in the same words, escalated 5 times: nothing in the input
    tells the escalations apart, so they are a rate of the one case, not a case of their own."""
    question = "Can I still change the delivery address of my parcel?"
    traces = []
    for n in range(30):
        escalated = n % 6 == 5
        traces.append(
            AgentTrace(
                trace_id=f"{n:032x}",
                request_id=f"req-{n}",
                input=question,
                output="A colleague will contact you." if escalated else "Yes, until it ships.",
                trace=ProcessTrace(tool_calls=(ToolCall("lookup"),), escalated=escalated),
            ).to_dict()
        )
    built, cases = _build(tmp_path, traces)
    (case,) = cases
    assert {"type": "escalated", "value": False} not in case["trace_checks"]
    (rate,) = [p for p in case["properties"] if p["check"]["type"] == "escalated"]
    assert (rate["check"]["value"], rate["held"], rate["of"], rate["stable"]) == (
        False,
        25,
        30,
        False,
    )
    assert "2 outcome path(s)" in built.output and "1 have a case of their own" in built.output
    report = (tmp_path / "ev" / "report.md").read_text(encoding="utf-8")
    assert "escalated 5/30 (rate)" in report


def test_the_cases_do_not_depend_on_the_order_of_the_traffic(tmp_path: Path) -> None:
    """The same traces in another order (two replicas' stores exported together) give the same
    cases: a path's representative is the middle of its run in visiting order, never in input
    order (tests/collector/test_scaleout.py failed 1 run in 3 on it)."""
    import random

    traces, _ = serve(applications(240, seed=4), seed=6, escalate_rate=0.04, retry_rate=0.03)
    shuffled = list(traces)
    built = []
    for name, order in (("a", traces), ("b", shuffled), ("c", list(reversed(traces)))):
        if name == "b":
            random.Random(3).shuffle(shuffled)
        folder = tmp_path / name
        folder.mkdir()
        _build(folder, order)
        built.append((folder / "ev" / "cases.jsonl").read_bytes())
    assert built[0] == built[1] == built[2]


def _text_clusters(tmp_path: Path, traces: list[dict[str, Any]]) -> Counter[int]:
    """How many text clusters (before any pooling) hold each template's requests."""
    from spanguard_processor.regression.mine.dedup import leader_clusters
    from spanguard_processor.regression.textnorm import fold, shingles, slot_values

    keys = list(dict.fromkeys(fold(slot_values(str(t["input"]))) for t in traces))
    assignment = leader_clusters([shingles(k) for k in keys], 0.6)
    return Counter(
        len({assignment[keys.index(k)] for k in keys if k.startswith(p)})
        for p in ("helloiam", "loanapplication", "canigeta")
    )


def test_a_path_spread_over_wording_variants_of_one_template_gets_a_case(tmp_path: Path) -> None:
    """Template 0 ("Hello, I am {name}, a {type} customer …") varies in names and purposes past
    the dedup threshold: its requests fall into several text clusters. Measured on main: its
    (decline, verify_income) path, seen 3 times over two of them, got no case (52 of 100
    such traffics covered every path seen ≥ 3 times, bench/bench_regression_paths.py)."""
    apps = applications(64, seed=3)
    traces, _ = serve(apps, seed=20_003)
    assert max(_text_clusters(tmp_path, traces)) >= 2  # the premise: wording variants split
    built, cases = _build(tmp_path, traces)
    triple = {a.prompt: (a.template, decide(a), tool_path(a)) for a in apps}
    occurring = Counter(triple.values())
    assert occurring[(0, "decline", "verify")] == 3
    covered = {triple[c["input"]] for c in cases}
    assert {t for t, n in occurring.items() if n >= 3} <= covered
    assert "wording variant(s)" in built.output


def test_a_variant_asked_once_and_escalated_at_random_is_not_a_case(tmp_path: Path) -> None:
    """Measured on main: at 10 % random escalations, a wording variant of a template asked
    once (its own text cluster) whose one request was escalated at random became a case
    asserting ``escalated: true`` (trial 22 of bench/bench_regression_paths.py)."""
    apps = applications(240, seed=22)
    traces, outcomes = serve(apps, 10_022, 0.10, 0.03, refer=False)
    _, cases = _build(tmp_path, traces)
    by_prompt = _by_prompt(apps)
    for case in cases:
        rep = by_prompt[case["input"]]
        assert outcomes[rep.request_id] == decide(rep, refer=False), case["id"]
        assert {"type": "escalated", "value": True} not in case.get("trace_checks", [])
