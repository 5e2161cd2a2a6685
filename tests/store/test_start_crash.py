"""A crash while the store's checks run loses nothing acknowledged (issue 37, "Fast start on
a big store"): requests acknowledged during the checks (their bodies stored, not indexed) are
in the store after ``kill -9``, and the next start indexes them, each span once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from spanguard_processor.store.span_store import SpanStore
from tests.agent_app import encoded_requests
from tests.serve_process import ServeProcess, free_port

pytestmark = pytest.mark.integration

# serve, with a quick_check that takes 3 s (as on a large store)
_SLOW_SERVE = """
import sys, time
from spanguard_processor.store import span_store
check_pages = span_store.check_pages
def slow(*args):
    time.sleep(3)
    check_pages(*args)
span_store.check_pages = slow
from spanguard_processor.cli import cli
cli(["serve", "--store", sys.argv[1], "--grpc-port", "0", "--http-port", sys.argv[2]])
"""


@pytest.mark.slow
def test_a_kill_during_the_checks_loses_no_acknowledged_request(tmp_path: Path) -> None:
    store = tmp_path / "spans.db"
    requests = encoded_requests(12)
    first = ServeProcess(store, "--wait-duration", "0.1")
    for request in requests[:4]:
        reply = httpx.post(first.url + "/v1/traces", content=request.body, headers=_PROTO)
        assert reply.status_code == 200
    first.terminate()
    port = free_port()
    child = subprocess.Popen(
        [sys.executable, "-c", _SLOW_SERVE, str(store), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                health = httpx.get(url + "/health", timeout=2).json()
                break
            except httpx.HTTPError:
                time.sleep(0.05)
        acked = []
        for request in requests[4:]:
            reply = httpx.post(url + "/v1/traces", content=request.body, headers=_PROTO)
            assert reply.status_code == 200
            acked.append(request)
        during = httpx.get(url + "/health", timeout=2).json()
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
    assert health["parts"]["store"].startswith("checking")
    assert during["parts"]["writer"].startswith("starting")  # all acknowledged before ready
    expected = {pair for request in requests for pair in request.span_ids}
    with SpanStore(store, readonly=True) as reader:  # read as a reader reads a live store
        assert set(reader.span_ids()) == expected
    last = ServeProcess(store, "--wait-duration", "0.1")
    last.terminate()
    with SpanStore(store, readonly=True) as reader:  # indexed by the next start, once each
        rows = reader.span_ids()
        unindexed = reader.db.execute(
            "SELECT count(*) FROM batches WHERE id NOT IN (SELECT batch_id FROM batch_traces)"
        ).fetchone()[0]
    assert unindexed == 0
    assert len(rows) == len(set(rows)) and set(rows) == expected


_PROTO = {"Content-Type": "application/x-protobuf"}
