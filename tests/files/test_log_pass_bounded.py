"""The first pass over span files (the OTLP log records beside the spans, inputs/logfiles.py)
holds no more than the span pass does: a line over the line limit, or a whole document over
the document limit, is never read into memory whole. The span pass then names it (exit 2).

Before the merge of the files and otel branches the log pass iterated the file's raw lines
and read a whole-JSON file without a bound: a 48 MiB line cost at least 48 MiB before the
span pass refused it at 1 MiB."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from spanguard_processor.inputs.logfiles import scan_log_events

MIB = 1 << 20
_SPAN_LINE = json.dumps(
    {
        "resourceSpans": [
            {
                "resource": {},
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": "a" * 32,
                                "spanId": "b" * 16,
                                "name": "chat",
                                "startTimeUnixNano": "1",
                                "endTimeUnixNano": "2",
                            }
                        ]
                    }
                ],
            }
        ]
    }
)


def _peak_bytes(path: Path) -> int:
    tracemalloc.start()
    try:
        scan_log_events([path])
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_long_line_is_not_read_whole_by_the_log_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "spans.jsonl"
    huge = b'{"resourceLogs": "' + b"x" * (48 * MIB) + b'"}\n'
    path.write_bytes(_SPAN_LINE.encode() + b"\n" + huge)
    monkeypatch.setenv("SPANGUARD_MAX_LINE_BYTES", str(MIB))
    assert _peak_bytes(path) < 8 * MIB


def test_a_whole_document_over_the_limit_is_not_read_by_the_log_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "spans.json"
    document = {
        "resourceSpans": json.loads(_SPAN_LINE)["resourceSpans"],
        "padding": "x" * (48 * MIB),
    }
    path.write_text(json.dumps(document, indent=1))
    monkeypatch.setenv("SPANGUARD_MAX_DOCUMENT_BYTES", str(MIB))
    assert _peak_bytes(path) < 8 * MIB
