"""The conversation an OpenAI-compatible adapter holds with the model for one variant.

One model call per variant, or, with tool functions, a loop: the tools the model asks for run
(each in its ``execute_tool`` span) and their outputs go back to it until it answers without
tool calls. The steps are written once, as a generator (:class:`_Loop`) that yields each call
to make and receives its result; the sync and the async app of :func:`tool_loop_app` only make
those calls, one plainly and one with ``await``. :class:`_Dialogue` knows how each API takes
the conversation's next turn.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import spanguard

from ._base import (
    AdapterError,
    App,
    TraceMapper,
    apply_trace_mapper,
    as_agent,
    record_tool_call,
    run_as_tool,
)
from .openai_answers import CHAT, ModelAnswer, answer_result, record_answer

__all__ = ["Build", "Parse", "Request", "Result", "ToolFunction", "ToolFunctions", "tool_loop_app"]

# the request of one turn: keyword arguments of create(), JSON-like values as the API takes them
Request = dict[str, Any]
Build = Callable[[str, Mapping[str, str]], Request]
# a response object of the openai package (or of any client of the same shape): read by
# attribute, never imported, hence Any
Parse = Callable[[Any], ModelAnswer]
# what the app returns: the answer's text, or {"text": refusal, "metadata": {"refusal": True}}
Result = str | dict[str, Any]
# a tool function of the user's: any arguments the model sends, any JSON-able result
ToolFunction = Callable[..., object]
ToolFunctions = Mapping[str, ToolFunction]


class _Dialogue:
    """How one API continues a conversation after tool calls: the request of the first turn,
    and the request of the next turn given the last response and the tools' outputs."""

    def __init__(self, adapter: str, first: Request) -> None:
        self.adapter = adapter
        self.request = first

    def follow_up(self, response: Any, outputs: Sequence[tuple[str | None, str]]) -> None:
        """Add the response (an openai object: ``Any``) and the tools' outputs to the request."""
        if self.adapter == CHAT:
            message = _assistant_message(response.choices[0].message)
            self.request["messages"] = [
                *self.request["messages"],
                message,
                *(
                    {"role": "tool", "tool_call_id": call_id, "content": text}
                    for call_id, text in outputs
                ),
            ]
        else:
            given = self.request["input"]
            history = given if isinstance(given, list) else [{"role": "user", "content": given}]
            items = [item.model_dump(exclude_none=True) for item in response.output]
            self.request["input"] = [
                *history,
                *items,
                *(
                    {"type": "function_call_output", "call_id": call_id, "output": text}
                    for call_id, text in outputs
                ),
            ]


def _assistant_message(message: Any) -> dict[str, object]:
    """The assistant's tool-calling turn as a request message (only the fields a request
    takes; a response message also carries e.g. ``annotations``)."""
    calls = []
    for call in getattr(message, "tool_calls", None) or ():
        function = getattr(call, "function", None)
        if function is not None:
            calls.append(
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": function.name, "arguments": function.arguments},
                }
            )
        elif (custom := getattr(call, "custom", None)) is not None:
            calls.append(
                {
                    "id": call.id,
                    "type": "custom",
                    "custom": {"name": custom.name, "input": custom.input},
                }
            )
    return {"role": "assistant", "content": getattr(message, "content", None), "tool_calls": calls}


def _arguments(arguments: str) -> dict[str, object] | None:
    try:
        parsed = json.loads(arguments or "{}")
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _run_tool(function: ToolFunction, name: str, call_id: str | None, arguments: str) -> object:
    """Run one tool function inside its ``execute_tool`` span; a failure is the tool's
    output (the model sees it, as with a real tool runtime), not the app's."""
    parsed = _arguments(arguments)

    def failed(exc: Exception) -> str:
        return f"error: {type(exc).__name__}: {exc}"

    if inspect.iscoroutinefunction(function):

        async def call_async() -> object:
            if parsed is None:
                return f"error: the arguments of {name} are not a JSON object"
            try:
                return await function(**parsed)
            except Exception as exc:
                return failed(exc)

        return run_as_tool(name, call_id, call_async)

    def call() -> object:
        if parsed is None:
            return f"error: the arguments of {name} are not a JSON object"
        try:
            return function(**parsed)
        except Exception as exc:
            return failed(exc)

    return run_as_tool(name, call_id, call)


def _as_text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


@dataclass(frozen=True)
class _Ask:
    """A step of the conversation: call the model with ``request``."""

    request: Request


@dataclass(frozen=True)
class _Run:
    """A step of the conversation: run the tool the model asked for."""

    name: str
    call_id: str | None
    arguments: str


# the conversation of one variant: yields what to call, receives its result, returns the answer
Conversation = Generator[_Ask | _Run, object, Result]


class _Loop:
    """The steps of one variant's conversation, the same for a sync and an async client: ask the
    model, run the tools it asks for (when all are in ``tool_functions``) and send their
    outputs back, until it answers without tool calls or ``max_turns`` is reached.

    :meth:`conversation` is a generator that yields each call to make (:class:`_Ask`,
    :class:`_Run`) and receives its result, so the sync and the async app only make the calls:
    one calls, the other awaits."""

    def __init__(
        self,
        adapter: str,
        model: str,
        build: Build,
        parse: Parse,
        trace_mapper: TraceMapper | None,
        functions: Mapping[str, ToolFunction],
        max_turns: int,
    ) -> None:
        self.adapter, self.model, self.build, self.parse = adapter, model, build, parse
        self.trace_mapper, self.functions, self.max_turns = trace_mapper, functions, max_turns
        self.what = "chat completion" if adapter == CHAT else "response"

    def conversation(self, prompt: str, assignments: Mapping[str, str]) -> Conversation:
        dialogue = _Dialogue(self.adapter, self.build(prompt, assignments))
        for _ in range(self.max_turns):
            with spanguard.llm_call(self.model, provider="openai") as call:
                response = yield _Ask(dialogue.request)
                answer = self.parse(response)
                record_answer(call, answer)
            if not self._runnable(answer):
                return self._finish(answer, response, record_calls=True)
            outputs = []
            for (name, call_id), arguments in zip(answer.tool_calls, answer.arguments, strict=True):
                value = yield _Run(name, call_id, arguments)
                outputs.append((call_id, _as_text(value)))
            dialogue.follow_up(response, outputs)
        return self._finish(answer, response, record_calls=False)

    def tool(self, step: _Run) -> object:
        """The tool's output (an awaitable for a coroutine function, with an async client)."""
        return _run_tool(self.functions[step.name], step.name, step.call_id, step.arguments)

    def sync_tool(self, step: _Run) -> object:
        """The tool's output, with a sync client (which cannot await a coroutine function)."""
        if inspect.iscoroutinefunction(self.functions[step.name]):
            raise AdapterError(
                self.adapter,
                f"the tool function {step.name} is a coroutine "
                "function; with a sync client use plain functions.",
            )
        return self.tool(step)

    def _runnable(self, answer: ModelAnswer) -> bool:
        return (
            bool(self.functions)
            and bool(answer.tool_calls)
            and all(name in self.functions for name, _ in answer.tool_calls)
        )

    def _finish(self, answer: ModelAnswer, response: object, *, record_calls: bool) -> Result:
        if record_calls:  # asked for but not run here: the request is what the app did
            for name, call_id in answer.tool_calls:
                record_tool_call(name, call_id)
        apply_trace_mapper(self.adapter, self.trace_mapper, response)
        return answer_result(self.adapter, answer, self.what)


class _Turn:
    """Drives one conversation: hands it the outcome of its last call (the result, or the
    exception, raised where it made the call) and takes its next step; None once it has
    answered, the answer then in ``value``."""

    def __init__(self, steps: Conversation) -> None:
        self.steps = steps
        self.result: object = None
        self.failure: BaseException | None = None
        self.value: Result = ""

    def next(self) -> _Ask | _Run | None:
        try:
            if self.failure is not None:
                failure, self.failure = self.failure, None
                return self.steps.throw(failure)
            return self.steps.send(self.result)
        except StopIteration as done:
            self.value = done.value
            return None


def tool_loop_app(
    adapter: str,
    create: Callable[..., Any],
    model: str,
    build: Build,
    parse: Parse,
    trace_mapper: TraceMapper | None,
    tool_functions: ToolFunctions | None,
    max_turns: int,
) -> App:
    """One model call per variant, or, with ``tool_functions``, a loop: the tools the model
    asks for run and their outputs go back to it until it answers without tool calls."""
    loop = _Loop(adapter, model, build, parse, trace_mapper, dict(tool_functions or {}), max_turns)

    if inspect.iscoroutinefunction(inspect.unwrap(create)):

        async def app_async(prompt: str, assignments: Mapping[str, str]) -> Result:
            turn = _Turn(loop.conversation(prompt, assignments))
            while (step := turn.next()) is not None:
                try:
                    if isinstance(step, _Ask):
                        turn.result = await create(**step.request)
                    else:
                        output = loop.tool(step)
                        turn.result = await output if inspect.isawaitable(output) else output
                except BaseException as exc:  # handed back to the conversation
                    turn.failure = exc
            return turn.value

        return as_agent(app_async, adapter)

    def app(prompt: str, assignments: Mapping[str, str]) -> Result:
        turn = _Turn(loop.conversation(prompt, assignments))
        while (step := turn.next()) is not None:
            try:
                turn.result = (
                    create(**step.request) if isinstance(step, _Ask) else loop.sync_tool(step)
                )
            except BaseException as exc:  # handed back to the conversation
                turn.failure = exc
        return turn.value

    return as_agent(app, adapter)
