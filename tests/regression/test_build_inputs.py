"""Bad input, fixed trace2eval defects and determinism of ``spanguard cases build``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanguard_processor.cli import cli

from .conftest import SPANGUARD, run


def _write(path: Path, rows: list[object]) -> Path:
    path.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    return path


def _build(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["cases", "build", *args])
    return result.exit_code, result.stdout, result.stderr


def _cases(out: Path) -> list[dict[str, object]]:
    return [
        json.loads(line) for line in (out / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    ]


def test_bad_lines_are_reported_by_file_and_line_and_the_rest_still_counts(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    good = json.dumps(
        {"id": "a", "input": "how do I reset my password", "output": "", "latency_ms": "slow"}
    ).encode()
    lines = [
        b"\xef\xbb\xbf" + good,  # 1: a BOM is accepted
        b'{"id": "b", "input": "caf\xe9", "output": "x"}',  # 2: Latin-1 byte
        b"\x00\x01\x02garbage",  # 3: binary garbage
        b'{"id": "c", "input": "question only"}',  # 4: no output
        b"[1, 2]",  # 5: not an object
        b'{"id": "d", "input": "' + b"x" * 300 + b'", "output": "y"}',  # 6: over the cap
        b'{"id": "e", "input": "q", "output": "", "expect": {"min_chars": "many"}}',  # 7
        b"",  # 8: blank, numbered
        json.dumps({"id": "f", "input": "refund policy", "output": "", "feedback": "bad"}).encode(),
    ]
    log.write_bytes(b"\n".join(lines) + b"\n")
    code, out, err = _build(str(log), "-o", str(tmp_path / "ev"), "--max-line-bytes", "200")
    name = log.as_posix()
    assert code == 0, err
    assert err.splitlines() == [
        f"warning: {name}:1: field 'latency_ms': expected a number, got 'slow'; "
        "treated as missing.",
        f"skipped: {name}:2: is not valid UTF-8 (byte 26); line skipped.",
        f"skipped: {name}:3: is not valid JSON (unexpected character, expected a JSON value, "
        "column 1); line skipped.",
        f"skipped: {name}:4: field 'output': is missing (looked for output, response, completion, "
        "answer, assistant_message); line skipped.",
        f"skipped: {name}:5: is not a JSON object; line skipped.",
        f"skipped: {name}:6: is 340 bytes long, over the 200-byte line cap; line skipped.",
        f"skipped: {name}:7: field 'expect.min_chars': expected a whole number of characters, "
        "got 'many'; line skipped.",
    ]
    assert out.splitlines()[:2] == [f"read 2 traces from {name}", "  skipped 6 unreadable line(s)"]
    assert len(_cases(tmp_path / "ev")) == 2
    strict = _build(str(log), "-o", str(tmp_path / "ev2"), "--max-line-bytes", "200", "--strict")
    assert strict[0] == 2
    assert strict[2].splitlines()[-1] == (
        "Error: 6 input line(s) were skipped (see above) and "
        "--strict is set; the case set was written from the rest."
    )


def test_no_usable_rows_and_bad_options_exit_2_with_a_sentence(tmp_path: Path) -> None:
    log = tmp_path / "empty.jsonl"
    log.write_text("not json\n", encoding="utf-8")
    code, _, err = _build(str(log), "-o", str(tmp_path / "ev"))
    assert code == 2
    assert err.splitlines() == [  # the reasons the message points at are listed above it
        f"skipped: {log.as_posix()}:1: is not valid JSON (invalid literal, expected 'null', "
        "column 1); line skipped.",
        f"Error: no usable traces found in {log.as_posix()} (1 line(s) "
        "skipped; the first reasons are listed above).",
    ]
    good = _write(tmp_path / "g.jsonl", [{"input": "q", "output": ""}])
    for option, value, message in (
        ("--max-cases", "-1", "Error: --max-cases: must be at least 1, got -1."),
        (
            "--dedup-threshold",
            "nan",
            "Error: --dedup-threshold: must be a number in (0, 1], got nan.",
        ),
        (
            "--similarity",
            "nosuchmodule_xyz:f",
            "Error: --similarity: the similarity matcher 'nosuchmodule_xyz:f' cannot be "
            "imported: No module named 'nosuchmodule_xyz'.",
        ),
    ):
        code, _, err = _build(str(good), "-o", str(tmp_path / "ev"), option, value)
        assert (code, err.strip()) == (2, message)
    missing = _build(str(tmp_path / "absent.jsonl"))
    assert missing[0] == 2


def test_short_identical_inputs_merge_into_one_case(tmp_path: Path) -> None:
    log = _write(
        tmp_path / "hi.jsonl",
        [{"id": f"r{i}", "input": "hi", "output": "", "feedback": "negative"} for i in range(1000)],
    )
    code, _, _ = _build(str(log), "-o", str(tmp_path / "ev"))
    assert code == 0
    (case,) = _cases(tmp_path / "ev")
    assert (case["occurrences_in_log"], case["duplicate_count"]) == (1000, 999)
    assert len(case["duplicate_trace_ids"]) == 999  # type: ignore[arg-type]


def test_duplicate_ids_stay_separate_rows(tmp_path: Path) -> None:
    rows = [
        {"id": "same", "input": "how do I cancel my subscription", "output": "", "feedback": "bad"},
        {
            "id": "same",
            "input": "what is the weather in Paris today",
            "output": "Sunny, 21°C.",
            "feedback": "negative",
        },
    ]
    code, _, err = _build(str(_write(tmp_path / "d.jsonl", rows)), "-o", str(tmp_path / "ev"))
    assert code == 0
    assert "warning: 1 row(s) reuse an id seen earlier (first: 'same' at" in err
    cases = _cases(tmp_path / "ev")
    assert [c["occurrences_in_log"] for c in cases] == [1, 1]
    assert [c["duplicate_trace_ids"] for c in cases] == [[], []]


def test_numeric_feedback_is_read_on_its_scale(tmp_path: Path) -> None:
    rows = [
        {
            "id": f"t{i}",
            "input": f"question number {i} about billing",
            "output": "An answer.",
            "thumbs": v,
        }
        for i, v in enumerate([1, 0, 1])
    ]
    rows += [
        {
            "id": f"s{i}",
            "input": f"eval item {i} about shipping",
            "output": "An answer.",
            "score": v,
        }
        for i, v in enumerate([0.93, 0.1, 0.88])
    ]
    code, _, _ = _build(str(_write(tmp_path / "f.jsonl", rows)), "-o", str(tmp_path / "ev"))
    assert code == 0
    negative = {
        c["source_trace_id"]
        for c in _cases(tmp_path / "ev")
        if any(s["name"] == "negative_feedback" for s in c["signals"])
    }  # type: ignore[attr-defined]
    assert negative == {"t1", "s1"}


@pytest.mark.slow
def test_output_is_byte_identical_across_runs_and_hash_seeds(workdir: Path) -> None:
    outputs = []
    for seed in ("0", "1", "12345"):
        result = run(
            [*SPANGUARD, "cases", "build", "examples/sample_traces.jsonl", "-o", f"out_{seed}"],
            workdir,
            seed=seed,
        )
        assert result.returncode == 0, result.stderr
        outputs.append(
            [
                (workdir / f"out_{seed}" / name).read_bytes()
                for name in ("cases.jsonl", "report.md", "expectations.template.jsonl")
            ]
        )
        outputs[-1].append(result.stdout.replace(f"out_{seed}", "OUT").encode())
    assert outputs[0] == outputs[1] == outputs[2]


def test_annotations_report_orphans_and_accept_required(tmp_path: Path, t2e_fixtures: Path) -> None:
    log = t2e_fixtures / "sample_traces.jsonl"
    exp = tmp_path / "exp.jsonl"
    exp.write_text(
        '{"input": "修改手机号", "expect": {"min_chars": 20, "json": true, "required": ["a"]}}\n'
        '{"input": "从未出现的问题", "expect": {"min_chars": 5}}\n'
        '{"input": "x", "expect": {"min_chars": []}}\n',
        encoding="utf-8",
    )
    code, _, err = _build(str(log), "-o", str(tmp_path / "ev"), "--expectations", str(exp))
    assert code == 0
    name = exp.as_posix()
    assert (
        f"warning: {name}:3: field 'expect.min_chars': expected a whole number of characters, "
        "got []; line skipped." in err
    )
    assert (
        f"warning: {name}:2: the expectation for '从未出现的问题' matches no case in this build."
        in err
    )
    case = next(c for c in _cases(tmp_path / "ev") if c["input"] == "修改手机号")
    assert {"type": "json", "required": ["a"]} in case["checks"]  # type: ignore[operator]


def test_a_rambling_answer_gets_a_max_chars_bound_not_a_min_chars_from_itself(
    tmp_path: Path,
) -> None:
    rows = [
        {
            "id": f"n{i}",
            "input": f"ordinary question {i} about invoices and plans",
            "output": "x" * 40,
        }
        for i in range(9)
    ]
    rows.append({"id": "long", "input": "tell me about the refund policy", "output": "y" * 500})
    code, _, _ = _build(
        str(_write(tmp_path / "l.jsonl", rows)), "-o", str(tmp_path / "ev"), "--select", "signals"
    )
    assert code == 0
    (case,) = _cases(tmp_path / "ev")
    assert case["checks"] == [
        {"type": "not_fallback"},
        {"type": "min_chars", "value": 1},
        {"type": "max_chars", "value": 120},
    ]
    assert case["reference_is_trusted"] is False
    assert case["self_check"] == {"passed": False, "failed_checks": ["max_chars"], "verdict": "ok"}


def test_a_custom_matcher_is_used_and_its_failure_exits_2(
    tmp_path: Path, t2e_fixtures: Path
) -> None:
    log = str(t2e_fixtures / "sample_traces.jsonl")
    code, out, _ = _build(
        log,
        "-o",
        str(tmp_path / "ev"),
        "--ids",
        "sequential",
        "--similarity",
        "trace2eval.select:shingle_similarity",
        "--select",
        "signals",
    )
    assert code == 0
    assert "  custom similarity matcher: the n-gram index is bypassed" in out
    assert len(_cases(tmp_path / "ev")) == 16
    code, _, err = _build(log, "-o", str(tmp_path / "ev2"), "--similarity", "os:getcwd")
    assert code == 2
    assert err.startswith("Error: --similarity: os:getcwd failed on ('")
