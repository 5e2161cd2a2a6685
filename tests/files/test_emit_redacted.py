"""``--redact`` keeps the app's words out of every report file and the console; the
gen_ai.evaluation.result records ``--emit-otlp`` sends are one more report and carry none
either (an escalation pair's headline quotes the app's escalation reason)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from spanguard_processor.cli import cli
from tests.emit.logs_sinks import HttpLogsSink
from tests.suites import write_suite

_FAST = ["--bootstrap", "300", "--permutations", "199"]
_SEEDS = 12
_REASON = "manual review of the flat application"


def _inputs(tmp_path: Path) -> tuple[Path, Path]:
    """12 seeds x 2 genders; every woman is escalated, with the app's reason."""
    suite = write_suite(
        tmp_path / "suite.json",
        {f"seed{i}": f"Case {i}: a {{gender}} renter asks for a flat." for i in range(_SEEDS)},
        {"gender": ["man", "woman"]},
        {"type": "escalation_parity", "threshold": 0.1},
    )
    traces = tmp_path / "traces.jsonl"
    traces.write_text(
        "".join(
            json.dumps(
                {
                    "trace_id": f"{i + 1:016x}{v:016x}",
                    "seed_id": f"seed{i}",
                    "variant_id": f"seed{i}::{v}",
                    "assignments": {"gender": gender},
                    "input": f"Case {i}: a {gender} renter asks for a flat.",
                    "output": "Noted.",
                    "trace": {
                        "escalated": gender == "woman",
                        "escalation_reason": _REASON if gender == "woman" else None,
                    },
                }
            )
            + "\n"
            for i in range(_SEEDS)
            for v, gender in ((1, "man"), (2, "woman"))
        )
    )
    return suite, traces


def _explanations(tmp_path: Path, *flags: str) -> list[str]:
    suite, traces = _inputs(tmp_path)
    with HttpLogsSink() as sink:
        result = CliRunner().invoke(
            cli, ["fairness", str(suite), str(traces), *_FAST, "--emit-otlp", sink.url, *flags]
        )
        records = sink.wait_for(3, timeout=5)
    assert result.exit_code == 1, result.output
    return [str(r.attributes.get("gen_ai.evaluation.explanation", "")) for r in records]


def test_without_redact_the_pairs_quote_the_app(tmp_path: Path) -> None:
    assert any(_REASON in text for text in _explanations(tmp_path))


def test_redact_sends_no_app_text(tmp_path: Path) -> None:
    texts = _explanations(tmp_path, "--redact")
    assert len(texts) >= 3
    assert [t for t in texts if _REASON in t] == []
