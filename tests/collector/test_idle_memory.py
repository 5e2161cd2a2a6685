"""Memory returns (issue 37): a writer idle for a while gives back what a burst grew — SQLite's
page cache, the span ids it remembers for deduplication, the traces it remembers as released —
and what it forgot costs nothing but a duplicate count: a span re-sent after that is stored
again and still read once. (RSS itself: bench/bench_serve_memory.py.)"""

from __future__ import annotations

import ctypes
import time
from pathlib import Path

import httpx
import pytest

from spanguard_processor.collector import ingestor as ingestor_module
from spanguard_processor.collector.server import ProcessorServer
from spanguard_processor.store.span_store import SpanStore

from ..reliability.hostile import tiny_spans_request
from ..reliability.servers import PROTO, running

pytestmark = pytest.mark.integration


def _sqlite_memory() -> int:
    """Bytes SQLite holds in this process (every connection: this test opens one)."""
    try:
        library = ctypes.CDLL("libsqlite3.so.0")
    except OSError:
        pytest.skip("no shared libsqlite3 to ask")
    library.sqlite3_memory_used.restype = ctypes.c_int64
    return int(library.sqlite3_memory_used())


def _post(server: ProcessorServer, body: bytes) -> int:
    return httpx.post(
        f"http://127.0.0.1:{server.http_port}/v1/traces", content=body, headers=PROTO, timeout=10
    ).status_code


def _health(server: ProcessorServer, until: str, value: int) -> dict[str, int]:
    deadline = time.monotonic() + 5
    while True:
        document: dict[str, int] = httpx.get(
            f"http://127.0.0.1:{server.http_port}/health", timeout=5
        ).json()
        if document[until] >= value or time.monotonic() > deadline:
            return document
        time.sleep(0.05)


@pytest.mark.slow
def test_an_idle_writer_gives_memory_back_and_a_later_resend_still_reads_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ingestor_module, "_REST_AFTER", 0.5)
    bodies = [tiny_spans_request(50, seed) for seed in range(40)]
    store = tmp_path / "s.db"
    with running(store, grpc_port=None, wait_duration=0.05) as server:
        codes = [_post(server, body) for body in bodies]
        codes.append(_post(server, bodies[0]))  # an exporter's retry, at once: remembered
        busy = _sqlite_memory()
        burst = _health(server, "spans_duplicated", 50)
        deadline = time.monotonic() + 5
        while server.ingestor.rests == 0 and time.monotonic() < deadline:
            time.sleep(0.05)  # the writer's rest is done (not merely some memory freed)
        rested = _sqlite_memory()
        codes.append(_post(server, bodies[1]))  # a retry after the writer rested
        later = _health(server, "spans_received", 42 * 50)
        time.sleep(0.3)  # indexed (duplicates are counted then) within 50 ms of idle
        after = _health(server, "spans_received", 42 * 50)
    assert codes == [200] * 42
    assert burst["spans_duplicated"] == 50
    assert rested < busy, (busy, rested)  # SQLite's page cache given back
    assert later["spans_received"] == 42 * 50
    assert after["spans_duplicated"] == 50  # forgotten: stored again, not counted
    with SpanStore(store, readonly=True) as reader:
        assert reader.span_count() == 40 * 50  # and read once
