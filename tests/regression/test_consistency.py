"""cases build: every mined check passes on the clean traffic it came from; timing limits
carry their question's own spread, or are left out with the reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from spanguard_processor.cli import cli

LONG = "To reset your password open Settings, choose Security and follow the e-mail link we send."


def _log(path: Path) -> Path:
    rows: list[dict[str, Any]] = []
    # Question A: nine clean answers, one much shorter than the rest; the last one was slow.
    for i in range(9):
        rows.append(
            {
                "id": f"a{i}",
                "input": "How do I reset my password?",
                "output": "Settings, then Security." if i == 3 else LONG,
                "latency_ms": 5000 if i == 8 else 400 + 10 * i,
            }
        )
    # Question B: a trace with an expect block that a clean sibling does not meet.
    rows.append(
        {
            "id": "b0",
            "input": "What is the capital of France?",
            "output": "The capital of France is Paris.",
            "latency_ms": 300,
            "expect": {"contains": "Paris", "min_chars": 10},
        }
    )
    rows.append(
        {
            "id": "b1",
            "input": "what is the capital of france",
            "output": "It is the city of lights, on the Seine.",
            "latency_ms": 300,
        }
    )
    # Filler: fast questions that set the log-wide latency p95.
    rows += [
        {
            "id": f"f{i}",
            "input": f"Unrelated topic {chr(65 + i)} about shipping zones?",
            "output": "We ship everywhere within a week.",
            "latency_ms": 350,
        }
        for i in range(20)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _build(tmp_path: Path, *extra: str) -> dict[str, dict[str, Any]]:
    out = tmp_path / ("ev" + "".join(extra).replace("-", ""))
    result = CliRunner().invoke(
        cli, ["cases", "build", str(_log(tmp_path / "log.jsonl")), "-o", str(out), *extra]
    )
    assert result.exit_code == 0, result.output
    cases = [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]
    return {c["input"]: c for c in cases}


def test_a_min_chars_above_a_clean_answer_is_loosened_with_the_reason(tmp_path: Path) -> None:
    case = _build(tmp_path)["How do I reset my password?"]
    shortest = len("Settings, then Security.")
    assert {"type": "min_chars", "value": shortest} in case["checks"]
    (adjusted,) = [a for a in case["adjusted_checks"] if a["type"] == "min_chars"]
    inferred = max(8, int(0.4 * len(LONG)))  # trace2eval's rule: 0.4 x the median clean answer
    assert adjusted == {
        "type": "min_chars",
        "action": "loosened",
        "from": inferred,
        "to": shortest,
        "reason": "1 of the 9 clean trace(s) it was mined from fail it; lowered "
        "to the shortest clean answer",
    }
    assert case["self_check"]["verdict"] == "ok"


def test_an_expect_check_a_clean_sibling_fails_is_left_out(tmp_path: Path) -> None:
    case = _build(tmp_path)["What is the capital of France?"]
    assert [c["type"] for c in case["checks"]] == ["not_fallback", "min_chars"]
    assert case["adjusted_checks"] == [
        {
            "type": "contains",
            "action": "omitted",
            "reason": "1 of the 2 clean trace(s) it was mined from fail it",
        }
    ]


def test_a_latency_limit_comes_from_the_question_s_own_clean_runs(tmp_path: Path) -> None:
    case = _build(tmp_path)["How do I reset my password?"]
    latencies = sorted([400.0 + 10 * i for i in range(8)] + [5000.0])
    position = 0.95 * (len(latencies) - 1)
    low = int(position)
    p95 = latencies[low] + (latencies[low + 1] - latencies[low]) * (position - low)
    # 1.5 x the p95 of the question's nine clean runs, but not below the slowest of them (the
    # 5,000 ms outlier): the limit passes on the traffic it came from.
    assert 1.5 * p95 < 5000
    assert case["trace_checks"] == [{"type": "max_latency_ms", "value": 5000.0}]
    assert not any(a["type"] == "max_latency_ms" for a in case["adjusted_checks"])


def test_timing_limits_tolerate_the_question_s_spread(tmp_path: Path) -> None:
    from spanguard_processor.regression.case import Adjustment, Check, Evidence
    from spanguard_processor.regression.checks import check_type, timing_limit

    latency = check_type("max_latency_ms")
    assert latency is not None
    runs = [Evidence(latency_ms=100.0 + i) for i in range(20)]
    check = timing_limit(latency, runs)
    assert check == Check.of("max_latency_ms", value=177.08)  # 1.5 x 118.05
    why = timing_limit(latency, runs[:7])
    assert isinstance(why, Adjustment) and "only 7 clean run(s)" in why.reason


def test_no_timing_checks_leaves_timing_out_of_selection_and_checks(tmp_path: Path) -> None:
    cases = _build(tmp_path, "--no-timing-checks", "--select", "signals")
    assert "How do I reset my password?" not in cases  # it was picked only for being slow
    assert all("trace_checks" not in c for c in cases.values())
