"""Waiting for the writer in the event loop (``Receiver.wait_async``): answered once the spans
are durable, refused as UNAVAILABLE on a failure or after ``ack_timeout``, and a request
given up (its task cancelled, e.g. the client hung up) leaves the writer's future alone, even
when the writer finishes after the loop is gone."""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import Future
from typing import Any, cast

import pytest

from spanguard_processor.collector.admission import Admission
from spanguard_processor.collector.limits import Limits
from spanguard_processor.collector.receive import Received, Receiver, Refusal, Refused
from spanguard_processor.ingest.spans import FORMAT_PROTOBUF, DecodedBatch

BATCH = DecodedBatch((), 0, None, FORMAT_PROTOBUF, b"")


def _receiver(ack_timeout: float = 5.0) -> Receiver:
    # only the limits are read while waiting: no ingestor is needed
    return Receiver(cast(Any, None), Admission(Limits(ack_timeout=ack_timeout)))


def _later(seconds: float, action: Any) -> threading.Thread:
    thread = threading.Timer(seconds, action)
    thread.start()
    return thread


def test_the_answer_comes_once_the_writer_resolves_the_future() -> None:
    stored: Future[None] = Future()
    writer = _later(0.05, lambda: stored.set_result(None))
    asyncio.run(_receiver().wait_async(Received(BATCH, stored)))
    writer.join()
    assert stored.done()
    asyncio.run(_receiver().wait_async(Received(BATCH, stored)))  # already done: at once


def test_a_store_failure_and_a_slow_store_are_refused_as_unavailable() -> None:
    failed: Future[None] = Future()
    failed.set_exception(OSError("disk full"))
    with pytest.raises(Refused) as refused:
        asyncio.run(_receiver().wait_async(Received(BATCH, failed)))
    assert refused.value.kind is Refusal.UNAVAILABLE
    assert "could not be stored (disk full)" in str(refused.value)
    pending: Future[None] = Future()
    with pytest.raises(Refused) as refused:
        asyncio.run(_receiver(ack_timeout=0.1).wait_async(Received(BATCH, pending)))
    assert refused.value.kind is Refusal.UNAVAILABLE and "slow" in str(refused.value)
    assert not pending.done()  # the writer's future is not cancelled


def test_a_request_given_up_leaves_the_writer_alone(caplog: pytest.LogCaptureFixture) -> None:
    stored: Future[None] = Future()

    async def give_up() -> None:
        task = asyncio.ensure_future(_receiver().wait_async(Received(BATCH, stored)))
        await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(give_up())
    assert not stored.cancelled() and not stored.done()
    with caplog.at_level(logging.DEBUG):
        stored.set_result(None)  # the writer finishes after the loop is closed
    assert not caplog.records
