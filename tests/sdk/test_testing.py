"""spanguard.testing: the pytest fixture, plain-dict spans, determinism, concurrent capture."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator

import opentelemetry.sdk.trace as sdk_trace
import pytest

import spanguard
from spanguard import semconv
from spanguard.testing import SpanCapture, capture_spans, span_to_dict, use_clock


@spanguard.tool
def step(i: int) -> int:
    return i


def test_fixture_from_the_pytest11_entry_point(spanguard_spans: SpanCapture) -> None:
    step(1)
    assert [s["name"] for s in spanguard_spans.spans()] == ["execute_tool step"]


def test_spans_are_plain_json_ready_dicts(capture: SpanCapture) -> None:
    with spanguard.request("agent", assignments={"a": "b"}):
        spanguard.escalate(reason="r")
    (span,) = capture.spans()
    assert json.loads(json.dumps(span)) == span
    assert span_to_dict(capture.readable_spans()[0]) == span
    assert span["kind"] == "INTERNAL" and span["status"] == {"code": "UNSET", "description": None}
    assert span["events"][0]["attributes"] == {semconv.ESCALATION_REASON: "r"}


def _run_twice() -> list[list[dict[str, object]]]:
    runs = []
    for _ in range(2):
        with (
            capture_spans(deterministic=True) as capture,
            spanguard.request("agent", request_id="fixed"),
        ):
            step(1)
            spanguard.friction("check")
        runs.append(capture.spans())
    return runs


def test_deterministic_ids_and_clock_repeat_exactly() -> None:
    first, second = _run_twice()
    assert first == second
    root, tool = first
    assert root["trace_id"] == "0" * 31 + "1" and root["span_id"] == "0" * 15 + "1"
    assert tool["span_id"] == "0" * 15 + "2"
    assert root["start_time_unix_nano"] < tool["start_time_unix_nano"]
    assert tool["end_time_unix_nano"] < root["end_time_unix_nano"]


def test_spans_events_and_annotations_read_time_from_spanguards_clock() -> None:
    readings: Iterator[int] = iter(range(1_000, 2_000, 10))
    with capture_spans() as capture, use_clock(lambda: next(readings)):
        with spanguard.request("agent", request_id="r1"):
            step(1)
            spanguard.friction("check")
        spanguard.feedback("r1", 1)
    root, tool, note = capture.spans()
    assert (
        root["start_time_unix_nano"],
        tool["start_time_unix_nano"],
        tool["end_time_unix_nano"],
        root["events"][0]["time_unix_nano"],
        root["end_time_unix_nano"],
        note["start_time_unix_nano"],
        note["end_time_unix_nano"],
    ) == (1_000, 1_010, 1_020, 1_030, 1_040, 1_050, 1_060)
    with capture_spans() as after:
        step(2)
    assert after.spans()[0]["start_time_unix_nano"] > 1_700_000_000 * 10**9  # the real clock


def test_deterministic_capture_leaves_opentelemetrys_clock_alone() -> None:
    with capture_spans(deterministic=True):
        assert sdk_trace.time_ns is time.time_ns


def test_capture_stops_and_later_spans_go_nowhere() -> None:
    with capture_spans() as capture:
        step(1)
    step(2)
    assert len(capture.spans()) == 1
    capture.clear()
    assert capture.spans() == []


def test_nested_captures_unwind_in_order() -> None:
    with capture_spans() as outer:
        step(1)
        with capture_spans() as inner:
            step(2)
        step(3)
    assert len(outer.spans()) == 2 and len(inner.spans()) == 1


def test_many_concurrent_requests_outside_pytest_style_use() -> None:
    capture = SpanCapture(capture_content=True)
    capture.start()
    try:
        ids: dict[str, str] = {}
        lock = threading.Lock()

        async def one(i: int) -> None:
            with spanguard.request("agent", seed_id=f"s{i}", input=f"prompt {i}") as req:
                await asyncio.sleep(0)
                step(i)
                with lock:
                    ids[req.request_id] = f"prompt {i}"

        def worker(start: int) -> None:
            async def many() -> None:
                await asyncio.gather(*(one(start + i) for i in range(25)))

            asyncio.run(many())

        threads = [threading.Thread(target=worker, args=(n * 25,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        capture.stop()
    assert len(capture.traces()) == 100
    for request_id, prompt in ids.items():
        spans = capture.request_spans(request_id)
        assert len(spans) == 2
        root = next(s for s in spans if s["parent_span_id"] is None)
        assert root["attributes"][semconv.INPUT_VALUE] == prompt


def test_content_setting_is_restored_after_capture() -> None:
    with capture_spans(capture_content=True):
        pass
    with capture_spans() as capture, spanguard.request("a", input="secret"):
        pass
    assert semconv.INPUT_VALUE not in capture.spans()[0]["attributes"]


@pytest.mark.parametrize("value", [0, 1])
def test_fixture_is_fresh_for_each_test(spanguard_spans: SpanCapture, value: int) -> None:
    assert spanguard_spans.spans() == []
    step(value)
