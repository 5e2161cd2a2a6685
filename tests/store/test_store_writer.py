"""One writer per store (issue 37, finding 2): ``ingest`` or a second ``serve`` on a store a
live ``serve`` writes is refused with exit 2 naming it, the serve keeps acknowledging, readers
keep reading, and ``ingest --via`` sends the file through the serve's receiver instead."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.serve_process import ServeProcess

from ..reliability.hostile import tiny_spans_request

pytestmark = pytest.mark.integration

DATA = Path(__file__).parents[1] / "data" / "otel" / "python_otlp_json_file_exporter.jsonl"
PROTO = {"content-type": "application/x-protobuf"}


def _spanguard(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "spanguard_processor", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _export(url: str, seed: int) -> int:
    return httpx.post(
        url + "/v1/traces", content=tiny_spans_request(3, seed), headers=PROTO, timeout=10
    ).status_code


@pytest.mark.slow
def test_ingest_into_a_live_serves_store_is_refused_and_serve_keeps_acknowledging(
    tmp_path: Path,
) -> None:
    store = tmp_path / "spans.db"
    server = ServeProcess(store, "--wait-duration", "0.05")
    try:
        statuses = [_export(server.url, seed) for seed in range(5)]
        ingest = _spanguard("ingest", str(DATA), "--store", str(store))
        statuses += [_export(server.url, seed) for seed in range(5, 30)]
        second = _spanguard("serve", "--store", str(store), "--grpc-port", "0", "--http-port", "0")
        statuses += [_export(server.url, seed) for seed in range(30, 35)]
        exported = _spanguard(
            "traces", "export", "--store", str(store), "-o", str(tmp_path / "out.jsonl")
        )
        health = httpx.get(server.url + "/health", timeout=5)
    finally:
        out = server.terminate()
    assert ingest.returncode == 2, ingest.stdout + ingest.stderr
    assert "is being written by spanguard serve (process" in ingest.stderr
    assert f"listening on {server.url}" in ingest.stderr
    assert "Traceback" not in ingest.stderr
    assert second.returncode == 2, second.stdout + second.stderr
    assert "is being written by spanguard serve" in second.stderr
    assert statuses == [200] * 35  # not a single 503
    assert health.status_code == 200
    assert exported.returncode == 0, exported.stderr  # readers work on a live store
    assert "35 traces released" in out or "stopped:" in out


@pytest.mark.slow
def test_ingest_via_sends_the_file_through_the_live_serve(tmp_path: Path) -> None:
    store = tmp_path / "spans.db"
    server = ServeProcess(store, "--wait-duration", "0.05")
    try:
        sent = _spanguard("ingest", str(DATA), "--via", server.url)
        health = server.wait_idle(1)
    finally:
        server.terminate()
    assert sent.returncode == 0, sent.stderr
    assert "sent" in sent.stdout and server.url in sent.stdout
    assert health["spans_received"] > 0
    direct = _spanguard("ingest", str(DATA), "--store", str(tmp_path / "direct.db"))
    assert direct.returncode == 0, direct.stderr
    count = "ingested {} span(s)"
    assert count.format(health["spans_received"]) in direct.stdout


def test_a_store_is_writable_again_once_its_writer_ended(tmp_path: Path) -> None:
    from spanguard_processor.store.lock import StoreLocked
    from spanguard_processor.store.span_store import SpanStore

    store = tmp_path / "spans.db"
    with SpanStore(store):
        with pytest.raises(StoreLocked, match="is being written by"):
            SpanStore(store)
        SpanStore(store, readonly=True).close()  # a reader takes no lock
    SpanStore(store).close()
    killed = subprocess.run(  # a writer killed outright leaves no lock behind
        [
            sys.executable,
            "-c",
            "import os, spanguard_processor.store.span_store as s; "
            f"s.SpanStore({str(store)!r}); os.kill(os.getpid(), 9)",
        ],
        capture_output=True,
        timeout=60,
    )
    assert killed.returncode == -9
    SpanStore(store).close()
