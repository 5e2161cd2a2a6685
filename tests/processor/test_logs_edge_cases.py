"""The logs receivers' smaller cases (issue 49 item 4, issue 48 item 5): deep OTLP-JSON bodies,
records without ``event_name``, and what conversion keeps of a record."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from ..reliability.servers import running

pytestmark = pytest.mark.integration
JSON = {"content-type": "application/json"}


def _deep(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"stringValue": "x"}
    for _ in range(depth):
        value = {"arrayValue": {"values": [value]}}
    return value


def _dumps(doc: object) -> bytes:
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 5000))
    try:
        return json.dumps(doc).encode()
    finally:
        sys.setrecursionlimit(limit)


def test_deep_json_logs_are_answered_like_deep_json_traces(tmp_path: Path) -> None:
    ids = {"traceId": "01" * 16, "spanId": "02" * 8}
    with running(tmp_path / "spans.db") as server:
        url = f"http://127.0.0.1:{server.http_port}"
        for depth in (95, 150, 300):
            value = _deep(depth)
            record = {**ids, "eventName": "e", "body": value}
            record["attributes"] = [{"key": "k", "value": value}]
            span = {**ids, "name": "s", "attributes": [{"key": "k", "value": value}]}
            logs = httpx.post(
                url + "/v1/logs",
                content=_dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [record]}]}]}),
                headers=JSON,
            )
            traces = httpx.post(
                url + "/v1/traces",
                content=_dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}),
                headers=JSON,
            )
            assert logs.status_code == traces.status_code, (depth, logs.text, traces.text)
            assert logs.status_code < 500, (depth, logs.text)
