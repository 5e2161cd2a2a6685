"""Every execution model: functions, coroutines, generators, async generators, threads, tasks."""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

import spanguard
from spanguard import semconv
from spanguard.testing import SpanCapture

pytestmark = pytest.mark.usefixtures("no_detach_errors")


class AppError(Exception):
    pass


@spanguard.tool
def add(a: int, b: int) -> int:
    return a + b


@spanguard.tool(name="kb_search", description="search the knowledge base")
async def search(query: str) -> str:
    await asyncio.sleep(0)
    return query.upper()


@spanguard.tool
def count(n: int) -> Iterator[int]:
    yield from range(n)


@spanguard.tool
async def acount(n: int) -> AsyncIterator[int]:
    for i in range(n):
        await asyncio.sleep(0)
        yield i


def _by_name(capture: SpanCapture, name: str) -> list[dict[str, Any]]:
    return [s for s in capture.spans() if s["name"] == name]


def test_plain_function_is_one_tool_span_with_the_contract_attributes(capture: SpanCapture) -> None:
    assert add(2, 3) == 5
    (span,) = capture.spans()
    assert span["name"] == "execute_tool add"
    attributes = span["attributes"]
    assert attributes[semconv.GEN_AI_OPERATION_NAME] == semconv.OP_EXECUTE_TOOL
    assert attributes[semconv.GEN_AI_TOOL_NAME] == "add"
    assert attributes[semconv.TOOL_NAME] == "add"
    assert attributes[semconv.OPENINFERENCE_SPAN_KIND] == semconv.OI_KIND_TOOL
    assert attributes[semconv.GEN_AI_TOOL_CALL_ID] == span["span_id"]
    assert semconv.GEN_AI_TOOL_CALL_ARGUMENTS not in attributes  # content is off
    assert span["status"]["code"] == "UNSET"


def test_named_coroutine_tool_covers_the_await(capture: SpanCapture) -> None:
    assert asyncio.run(search("refund")) == "REFUND"
    (span,) = capture.spans()
    assert span["name"] == "execute_tool kb_search"
    assert span["attributes"][semconv.GEN_AI_TOOL_DESCRIPTION] == "search the knowledge base"


def test_decorators_keep_the_function_kind_and_name() -> None:
    import inspect

    assert inspect.iscoroutinefunction(search)
    assert search.__name__ == "search" and add.__name__ == "add"


def test_generator_span_lasts_until_exhaustion_and_children_nest(capture: SpanCapture) -> None:
    @spanguard.tool
    def stream() -> Iterator[int]:
        yield add(1, 1)
        yield add(2, 2)

    assert list(stream()) == [2, 4]
    outer = _by_name(capture, "execute_tool stream")[0]
    inner = _by_name(capture, "execute_tool add")
    assert [s["parent_span_id"] for s in inner] == [outer["span_id"]] * 2
    assert outer["end_time_unix_nano"] >= max(s["end_time_unix_nano"] for s in inner)


def test_generator_span_ends_on_close(capture: SpanCapture) -> None:
    gen = count(10)
    assert next(gen) == 0
    assert capture.spans() == []  # still open
    gen.close()
    (span,) = capture.spans()
    assert span["status"]["code"] == "UNSET"


def test_generator_span_ends_when_garbage_collected(capture: SpanCapture) -> None:
    gen = count(10)
    next(gen)
    del gen
    gc.collect()
    assert len(capture.spans()) == 1


def test_generator_error_propagates_unchanged_and_is_recorded(capture: SpanCapture) -> None:
    error = AppError("boom")

    @spanguard.tool
    def failing() -> Iterator[int]:
        yield 1
        raise error

    with pytest.raises(AppError) as raised:
        list(failing())
    assert raised.value is error
    (span,) = capture.spans()
    assert span["status"]["code"] == "ERROR"
    assert span["attributes"]["error.type"] == "AppError"
    assert [e["name"] for e in span["events"]] == ["exception"]


def test_generator_send_and_throw_reach_the_inner_generator(capture: SpanCapture) -> None:
    @spanguard.tool
    def echo() -> Iterator[Any]:
        received = None
        while True:
            try:
                received = yield received
            except KeyError:
                received = "caught"

    gen = echo()
    next(gen)
    assert gen.send("a") == "a"
    assert gen.throw(KeyError("k")) == "caught"
    gen.close()
    assert len(capture.spans()) == 1


def test_generator_return_value_survives(capture: SpanCapture) -> None:
    @spanguard.tool
    def returns() -> Iterator[int]:
        yield 1
        return 7

    def consume() -> Iterator[int]:
        result = yield from returns()
        yield result

    assert list(consume()) == [1, 7]


def test_generator_resumed_in_another_thread_keeps_its_parent(capture: SpanCapture) -> None:
    with spanguard.request("agent") as req:
        gen = count(3)
    first = next(gen)
    rest: list[int] = []
    thread = threading.Thread(target=lambda: rest.extend(gen))
    thread.start()
    thread.join()
    assert [first, *rest] == [0, 1, 2]
    tool = _by_name(capture, "execute_tool count")[0]
    root = _by_name(capture, "invoke_agent agent")[0]
    assert tool["parent_span_id"] == root["span_id"]
    assert tool["trace_id"] == req.trace_id


def test_async_generator_lasts_until_exhaustion(capture: SpanCapture) -> None:
    async def main() -> list[int]:
        return [i async for i in acount(3)]

    assert asyncio.run(main()) == [0, 1, 2]
    assert len(capture.spans()) == 1


def test_async_generator_ends_on_aclose_and_on_error(capture: SpanCapture) -> None:
    @spanguard.tool
    async def failing() -> AsyncIterator[int]:
        yield 1
        raise AppError("late")

    async def main() -> None:
        agen = acount(5)
        assert await agen.__anext__() == 0
        await agen.aclose()
        with pytest.raises(AppError):
            async for _ in failing():
                pass

    asyncio.run(main())
    spans = capture.spans()
    assert [s["status"]["code"] for s in spans] == ["UNSET", "ERROR"]


def test_async_generator_abandoned_is_finalised_by_the_loop(capture: SpanCapture) -> None:
    async def main() -> None:
        agen = acount(5)
        await agen.__anext__()
        del agen
        gc.collect()
        await asyncio.sleep(0.01)

    asyncio.run(main())
    assert len(capture.spans()) == 1


def test_user_exception_propagates_unchanged(capture: SpanCapture) -> None:
    error = AppError("original")

    @spanguard.tool
    def boom() -> None:
        raise error

    @spanguard.tool
    async def aboom() -> None:
        raise error

    with pytest.raises(AppError) as raised:
        boom()
    assert raised.value is error
    with pytest.raises(AppError) as araised:
        asyncio.run(aboom())
    assert araised.value is error
    assert [s["status"]["code"] for s in capture.spans()] == ["ERROR", "ERROR"]
    # the message is the app's text: on the span only with content capture on (docs/sdk.md)
    assert capture.spans()[0]["status"]["description"] == "AppError"


def test_threadpool_children_keep_the_request_as_parent(capture: SpanCapture) -> None:
    with spanguard.request("agent"), ThreadPoolExecutor(max_workers=4) as pool:
        assert list(pool.map(add, range(8), range(8))) == [2 * i for i in range(8)]
    root = _by_name(capture, "invoke_agent agent")[0]
    tools = _by_name(capture, "execute_tool add")
    assert len(tools) == 8
    assert {s["parent_span_id"] for s in tools} == {root["span_id"]}
    assert {s["trace_id"] for s in tools} == {root["trace_id"]}


def test_asyncio_tasks_and_to_thread_keep_the_request_as_parent(capture: SpanCapture) -> None:
    async def main() -> None:
        with spanguard.request("agent"):
            await asyncio.gather(*(search(str(i)) for i in range(5)))
            await asyncio.to_thread(add, 1, 2)
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, add, 3, 4)

    asyncio.run(main())
    root = _by_name(capture, "invoke_agent agent")[0]
    children = [s for s in capture.spans() if s is not root and s["name"] != root["name"]]
    assert len(children) == 7
    assert {s["parent_span_id"] for s in children} == {root["span_id"]}


def test_concurrent_requests_in_threads_get_separate_traces(capture: SpanCapture) -> None:
    def one(i: int) -> str:
        with spanguard.request("agent", seed_id=f"s{i}") as req:
            add(i, i)
            list(count(2))
            return req.trace_id

    with ThreadPoolExecutor(max_workers=8) as pool:
        trace_ids = list(pool.map(one, range(40)))
    traces = capture.traces()
    assert len(set(trace_ids)) == 40 and set(traces) == set(trace_ids)
    for spans in traces.values():
        assert len(spans) == 3
        seeds = {s["attributes"].get(semconv.SEED_ID) for s in spans} - {None}
        assert len(seeds) == 1


def test_unconfigured_call_creates_no_span_and_returns_the_result() -> None:
    # no capture and no SDK provider in this test process: the direct path
    assert spanguard.semconv  # the package imported
    assert add(1, 2) == 3
    assert list(count(2)) == [0, 1]
    assert asyncio.run(search("x")) == "X"
    with spanguard.request("agent") as req:
        assert req.trace_id == "0" * 32
        assert len(req.request_id) == 32


def test_async_generator_resumed_from_another_task_keeps_its_parent(capture: SpanCapture) -> None:
    async def main() -> list[int]:
        with spanguard.request("agent"):
            agen = acount(3)
            first = await agen.__anext__()
        rest = await asyncio.create_task(_drain(agen))
        return [first, *rest]

    async def _drain(agen: AsyncIterator[int]) -> list[int]:
        return [i async for i in agen]

    assert asyncio.run(main()) == [0, 1, 2]
    root = _by_name(capture, "invoke_agent agent")[0]
    assert _by_name(capture, "execute_tool acount")[0]["parent_span_id"] == root["span_id"]


def test_cancelled_coroutine_ends_its_span_with_the_cancellation(capture: SpanCapture) -> None:
    @spanguard.tool
    async def slow() -> None:
        await asyncio.sleep(10)

    async def main() -> None:
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(slow(), timeout=0.01)

    asyncio.run(main())
    (span,) = capture.spans()
    assert span["attributes"]["error.type"] == "CancelledError"
