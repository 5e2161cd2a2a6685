"""One API shape: every decorator takes its name positionally or as ``name=``, misuse gives a
``TypeError`` with a usage hint, every public type is exported, and every decorator is built by
the one wrapper implementation."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import spanguard
from spanguard import semconv
from spanguard.testing import SpanCapture


def test_tool_takes_its_name_positionally_or_as_name(capture: SpanCapture) -> None:
    @spanguard.tool("kb_search")
    def positional() -> int:
        return 1

    @spanguard.tool(name="kb_search", description="search the knowledge base")
    def keyword() -> int:
        return 2

    assert (positional(), keyword()) == (1, 2)
    assert [s["name"] for s in capture.spans()] == ["execute_tool kb_search"] * 2
    assert capture.spans()[0]["attributes"][semconv.GEN_AI_TOOL_NAME] == "kb_search"


def test_retrieval_takes_its_name_positionally_as_name_or_as_source(capture: SpanCapture) -> None:
    docs = [{"id": "a", "group": "g"}]

    @spanguard.retrieval("kb")
    def positional() -> list[dict[str, str]]:
        return docs

    @spanguard.retrieval(name="kb")
    def keyword() -> list[dict[str, str]]:
        return docs

    @spanguard.retrieval(source="kb")  # the older spelling, kept as an alias
    def alias() -> list[dict[str, str]]:
        return docs

    positional(), keyword(), alias()
    spans = capture.spans()
    assert [s["name"] for s in spans] == ["retrieval kb"] * 3
    assert {s["attributes"][semconv.GEN_AI_DATA_SOURCE_ID] for s in spans} == {"kb"}


def test_request_takes_its_name_positionally_or_as_name(capture: SpanCapture) -> None:
    @spanguard.request(name="support")
    def keyword(prompt: str) -> str:
        return prompt

    @spanguard.request("support")
    def positional(prompt: str) -> str:
        return prompt

    keyword("a"), positional("b")
    assert [s["name"] for s in capture.spans()] == ["invoke_agent support"] * 2


@pytest.mark.parametrize(
    ("misuse", "api"),
    [
        (lambda: spanguard.tool(3), "spanguard.tool"),
        (lambda: spanguard.tool("kb")(3), "spanguard.tool"),
        (lambda: spanguard.tool(name=3)(len), "spanguard.tool"),
        (lambda: spanguard.tool("a", name="b"), "spanguard.tool"),
        (lambda: spanguard.retrieval("kb")(None), "spanguard.retrieval"),
        (lambda: spanguard.retrieval(name="a", source="b"), "spanguard.retrieval"),
        (lambda: spanguard.retrieval(mapper="not callable"), "spanguard.retrieval"),
        (lambda: spanguard.request("agent")("not a function"), "spanguard.request"),
        (lambda: spanguard.request(42), "spanguard.request"),
    ],
)
def test_misuse_is_a_type_error_with_a_usage_hint(misuse: Any, api: str) -> None:
    with pytest.raises(TypeError, match=rf"^{api} .* use .*@{api}") as error:
        misuse()
    assert f'@{api}("' in str(error.value) and "name=" in str(error.value)


def test_every_public_type_is_exported_in_a_sorted_all() -> None:
    assert spanguard.__all__ == sorted(spanguard.__all__)
    for name in spanguard.__all__:
        assert getattr(spanguard, name) is not None
    returned = [spanguard.request("a"), spanguard.plan(), spanguard.llm_call("m")]
    for value in returned:
        assert type(value).__name__ in spanguard.__all__
        assert getattr(spanguard, type(value).__name__) is type(value)
    with spanguard.request("a") as handle:
        assert getattr(spanguard, type(handle).__name__) is type(handle)


def test_every_decorator_uses_the_one_wrapper_implementation() -> None:
    def fn() -> None:
        pass

    wrappers = [
        spanguard.tool(fn),
        spanguard.retrieval(fn),
        spanguard.request(fn),
        spanguard.request("a")(fn),
        spanguard.tool("t")(fn),
    ]
    assert len({w.__code__ for w in wrappers}) == 1


def test_a_request_decorated_generator_joins_the_current_request(capture: SpanCapture) -> None:
    @spanguard.tool
    def token(text: str) -> str:
        return text

    @spanguard.request("streamer")
    def stream(prompt: str) -> Iterator[str]:
        yield token(prompt)

    with spanguard.request("harness", seed_id="s1") as req:
        assert list(stream("a")) == ["a"]
    spans = capture.spans()
    roots = [s for s in spans if s["parent_span_id"] is None]
    assert [r["name"] for r in roots] == ["invoke_agent harness"]
    assert roots[0]["attributes"][semconv.REQUEST_ID] == req.request_id
    (tool,) = [s for s in spans if s["parent_span_id"] is not None]
    assert tool["parent_span_id"] == roots[0]["span_id"]


def test_the_request_decorator_gives_a_request_handle_without_any_provider() -> None:
    seen: list[str] = []

    @spanguard.request("agent")
    def answer() -> None:
        handle = spanguard.current_request()
        assert handle is not None
        seen.append(handle.request_id)

    answer()
    assert len(seen[0]) == 32


# --- one scope object, many threads and tasks ------------------------------------------------
AGENT = spanguard.request("agent")


@pytest.mark.usefixtures("no_detach_errors")
def test_one_request_scope_entered_from_many_threads_at_once(capture: SpanCapture) -> None:
    barrier = threading.Barrier(8)
    ids: list[str] = []

    def handle(n: int) -> None:
        with AGENT as req:
            barrier.wait(timeout=10)  # every thread is inside the same scope object now
            with spanguard.plan():
                pass
            ids.append(req.request_id)
            barrier.wait(timeout=10)

    threads = [threading.Thread(target=handle, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(ids)) == 8
    traces = capture.traces()
    assert len(traces) == 8
    for spans in traces.values():
        root, plan = spans
        assert root["name"] == "invoke_agent agent" and root["parent_span_id"] is None
        assert plan["parent_span_id"] == root["span_id"]


@pytest.mark.usefixtures("no_detach_errors")
def test_one_request_scope_entered_from_many_tasks_at_once(capture: SpanCapture) -> None:
    async def handle() -> str:
        with AGENT as req:
            await asyncio.sleep(0.01)  # the other tasks enter meanwhile
            return req.request_id

    async def main() -> list[str]:
        return list(await asyncio.gather(*(handle() for _ in range(10))))

    assert len(set(asyncio.run(main()))) == 10
    assert len(capture.traces()) == 10


PLAN = spanguard.plan()
CALL = spanguard.llm_call("gpt-4o-mini")


@pytest.mark.usefixtures("no_detach_errors")
def test_one_plan_and_one_llm_call_scope_entered_from_many_threads(capture: SpanCapture) -> None:
    barrier = threading.Barrier(6)

    def handle(n: int) -> None:
        with AGENT, PLAN as plan:
            barrier.wait(timeout=10)
            spanguard.plan_step(f"step {n}")
            plan.step(f"alias {n}")
            with CALL as call:
                barrier.wait(timeout=10)
                call.record_usage(n, n)

    threads = [threading.Thread(target=handle, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    traces = capture.traces()
    assert len(traces) == 6
    for spans in traces.values():
        by_name = {s["name"]: s for s in spans}
        plan_span, chat = by_name["plan"], by_name["chat gpt-4o-mini"]
        steps = [e["attributes"][semconv.PLAN_STEP] for e in plan_span["events"]]
        n = int(steps[0].split()[1])
        assert steps == [f"step {n}", f"alias {n}"]
        assert chat["parent_span_id"] == plan_span["span_id"]
        assert chat["attributes"][semconv.GEN_AI_USAGE_INPUT_TOKENS] == n


def test_record_documents_names_its_source_like_retrieval(capture: SpanCapture) -> None:
    with spanguard.request("agent"):
        spanguard.record_documents([{"id": "a", "group": "g"}], name="cache")
        spanguard.record_documents([{"id": "b", "group": "g"}], source="web")  # the alias
    names = sorted(s["name"] for s in capture.spans())
    assert names == ["invoke_agent agent", "retrieval cache", "retrieval web"]
