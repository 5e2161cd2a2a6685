"""The SDK under fault injection: collector down, collector slow, invalid attribute values,
flush at exit and on SIGTERM. The app runs as a real subprocess with the real OTLP/gRPC
exporter and without ``SPANGUARD_STRICT`` (this repo's tests set it so that the SDK re-raises
its own bugs), so it behaves as in production. The app never sees an exception from spanguard.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.corpus import FIGURES
from tests.sdk.rotel_helper import OtlpGrpcSink, free_port

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


def _app(mode: str, endpoint: str, requests: int) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "SPANGUARD_STRICT"}
    env["PYTHONUNBUFFERED"] = "1"
    return subprocess.Popen(
        [sys.executable, "-m", "tests.reliability.sdk_app", mode, endpoint, str(requests)],
        cwd=ROOT,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _finish(process: subprocess.Popen[str], timeout: float = 60) -> tuple[dict[str, Any], float]:
    started = time.monotonic()
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    return json.loads(out.splitlines()[0]), time.monotonic() - started


class GatedSink(OtlpGrpcSink):
    """A collector that answers no export until :attr:`gate` is set (then answers them all)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.arrived = 0  # exports that reached the sink, answered or not

    def _add(self, request: Any) -> None:
        self.arrived += 1
        self.gate.wait(timeout=120)
        super()._add(request)


def _first_line(process: subprocess.Popen[str], timeout: float) -> str:
    """The app's first line of output, or "" when it printed none within ``timeout``."""
    assert process.stdout is not None
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(process.stdout.readline()))  # type: ignore[union-attr]
    reader.start()
    reader.join(timeout)
    return lines[0] if lines else ""


def test_collector_down_invalid_values_never_raise_and_exit_is_bounded() -> None:
    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    # exit is bounded: the exporter gives up after its retries (8-18 s measured) instead of
    # hanging; _finish's timeout only catches a hang, it is no latency target
    report, exit_seconds = _finish(_app("invalid", closed, 200), timeout=120)
    assert report["error_count"] == 0, report["errors"]
    assert report["ended"] >= 200 * 4
    FIGURES.append(
        f"collector down: 200 requests with invalid values, 0 exceptions, p50 "
        f"{report['p50_us']} µs, p99 {report['p99_us']} µs; exit after {exit_seconds:.1f} s"
    )


def test_invalid_values_to_a_live_collector_export_every_span() -> None:
    with OtlpGrpcSink() as sink:
        report, _ = _finish(_app("invalid", sink.endpoint, 100))
        assert report["error_count"] == 0, report["errors"]
        assert len(sink.wait_for_spans(report["ended"], timeout=10)) == report["ended"]


def test_slow_collector_does_not_slow_the_app_and_exit_flushes_everything() -> None:
    # Structure, not a latency (issue 49): the collector answers no export until the app has
    # finished every request, so an app whose request path waited on the exporter would never
    # finish them (the first request would wait for the gate); then every span is flushed at
    # exit once the collector answers.
    with GatedSink() as gated:
        process = _app("valid", gated.endpoint, 500)
        try:
            line = _first_line(process, timeout=120)
            assert line, "the app did not finish its requests while the collector answered none"
            report = json.loads(line)
            blocked = gated.arrived  # exports waiting on the collector while the app ran
        finally:
            gated.gate.set()
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err[-3000:]
        assert "Traceback" not in err, err[-3000:]
        assert report["error_count"] == 0
        spans = gated.wait_for_spans(500 * 3, timeout=30)
    assert len(spans) == report["ended"] == 500 * 3  # all flushed at exit, none dropped
    FIGURES.append(
        f"collector answering nothing until the app finished ({blocked} export(s) waiting): "
        f"p50 {report['p50_us']} µs, p99 {report['p99_us']} µs per request; every span "
        "flushed at exit"
    )


def test_sigterm_flushes_every_span_and_still_terminates() -> None:
    with OtlpGrpcSink() as sink:
        process = _app("sigterm", sink.endpoint, 300)
        assert process.stdout is not None
        report = json.loads(process.stdout.readline())
        assert process.stdout.readline().strip() == "READY"
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)
        assert process.returncode == -signal.SIGTERM  # terminated by SIGTERM, as before
        assert report["error_count"] == 0
        spans = sink.wait_for_spans(300 * 3, timeout=5)
    assert len(spans) == report["ended"] == 300 * 3
    FIGURES.append(
        f"SIGTERM: {len(spans)} of {report['ended']} queued spans flushed, "
        "exit status 'terminated by SIGTERM' kept"
    )
