"""One file classifier: the commands' input check (``guard.sniff``, :class:`FileKind`) and the
readers (``detect_kind`` / ``evaluation_kind``, :class:`InputKind`) tell a file's kind from
the same first record, so they never disagree about what a file holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spanguard_processor.inputs.files import (
    FileKind,
    InputKind,
    detect_kind,
    evaluation_kind,
    row_kind,
)
from spanguard_processor.inputs.guard import sniff

_SPANS = {"resourceSpans": [{"scopeSpans": []}]}
_LOGS = {"resourceLogs": [{"scopeLogs": []}]}  # the file exporter writes logs beside spans
_TRACE = {"trace_id": "ab" * 16, "input": "hi", "output": "hello"}
_RECORD = {"id": "s1::a", "seed_id": "s1", "output": "ok"}


@pytest.mark.parametrize(
    ("rows", "kind", "read_as", "evaluated_as"),
    [
        ([_SPANS, _LOGS], FileKind.SPAN_FILE, InputKind.OTLP_JSONL, InputKind.OTLP_JSONL),
        ([_LOGS, _SPANS], FileKind.SPAN_FILE, InputKind.OTLP_JSONL, InputKind.OTLP_JSONL),
        ([_TRACE, _TRACE], FileKind.AGENT_TRACES, InputKind.AGENT_JSONL, InputKind.JSON_LINES),
        ([_RECORD, _RECORD], FileKind.RECORDS, None, InputKind.JSON_LINES),
    ],
)
def test_the_check_and_the_readers_tell_one_kind(
    tmp_path: Path,
    rows: list[dict[str, object]],
    kind: FileKind,
    read_as: InputKind | None,
    evaluated_as: InputKind,
) -> None:
    path = tmp_path / "input.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    assert sniff(path, path.stat().st_size) is kind
    assert row_kind(rows[0]) is kind
    assert evaluation_kind(path) is evaluated_as
    if read_as is not None:
        assert detect_kind(path) is read_as


def test_a_one_line_document_of_spans_is_spans_to_both(tmp_path: Path) -> None:
    path = tmp_path / "spans.json"
    path.write_text(json.dumps([_LOGS, _SPANS]) + "\n", encoding="utf-8")
    assert sniff(path, path.stat().st_size) is FileKind.SPAN_FILE
    assert detect_kind(path) is evaluation_kind(path) is InputKind.OTLP_JSON
