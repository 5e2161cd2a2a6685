"""A stored batch without its index row (a writer stopped before indexing it, or the row
deleted; issue 49 item 3): ``store check`` names it, and readers keep its trace (released)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from spanguard_processor.cli import cli

from ..reliability.servers import PROTO, request_bytes, running, spans_of_one_trace

pytestmark = pytest.mark.integration


def test_a_deleted_index_row_is_named_and_its_trace_still_exported(tmp_path: Path) -> None:
    store = tmp_path / "spans.db"
    with running(store, wait_duration=0.0) as server:
        for index in range(3):
            body = request_bytes(spans_of_one_trace(3, text=f"request {index}"))
            url = f"http://127.0.0.1:{server.http_port}/v1/traces"
            assert httpx.post(url, content=body, headers=PROTO).status_code == 200
    with sqlite3.connect(store) as db:
        db.execute("DELETE FROM batch_traces WHERE batch_id = 1")
    runner = CliRunner()
    checked = runner.invoke(cli, ["store", "check", str(store)])
    assert checked.exit_code == 0, checked.output
    assert "3 trace(s) released, 0 pending" in checked.output
    assert "1 batch(es) have no index row (batch 1)" in checked.output
    out = tmp_path / "traces.jsonl"
    exported = runner.invoke(cli, ["traces", "export", "--store", str(store), "-o", str(out)])
    assert exported.exit_code == 0, exported.output
    assert len(out.read_text().splitlines()) == 3  # none silently dropped
