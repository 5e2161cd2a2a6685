"""Call an app in-process over a list of jobs and keep every span it emits.

The app takes ``app(prompt)`` or ``app(prompt, assignments)`` (its signature is read once, by
:func:`as_app`) and returns text, or a dict ``{"text": str, "metadata": {...}}``; plain
functions run in a thread pool, coroutine functions on one event loop, ``concurrency`` at a
time. Every call runs inside a spanguard request that carries the job's identity, the prompt
and the app's answer (:mod:`.recording`). The spans the app emits — through the SDK or its
other OpenTelemetry tracers (:mod:`.capture`) — are captured in memory and assembled into one
agent trace per call, read exactly as a span file of them is read. An app that emits no
process of its own may return its trace as ``metadata["trace"]`` instead (read by the
caller's ``read_process``); it is recorded as the spans the SDK would have emitted. An
exception in one call is recorded for that call and the rest still run; an interrupt (Ctrl-C)
starts no new call, lets the calls in flight end, and propagates.

Both evaluators call apps through here: ``spanguard run`` (fairness, one job per variant and
repeat) and ``spanguard cases run --app`` (regression, one job per case and repeat).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from spanguard import Request, RequestScope, request
from spanguard.exceptions import ConfigError, InputError
from spanguard.testing import SpanCapture

from ..traces.convert import traces_from_readable_spans
from ..traces.model import AgentTrace, ProcessTrace
from .capture import app_spans
from .recording import Seen, record_answer, record_question, replay_process

__all__ = ["App", "AppCall", "Job", "Progress", "ReadProcess", "as_app", "call_app"]

Progress = Callable[[int], None]
#: Reads a process trace the app returned as ``metadata["trace"]``; raises InputError if bad.
ReadProcess = Callable[[object], ProcessTrace]


@dataclass(frozen=True)
class App:
    """An app with its signature read: whether it takes the assignments as a second
    argument, and whether it is a coroutine function."""

    function: Callable[..., Any]
    takes_assignments: bool
    is_async: bool


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def as_app(function: Callable[..., Any] | App) -> App:
    """``function`` with its signature read once: two positional arguments when it can take
    them (``app(prompt, assignments)``, fairtrace's), else one (``app(prompt)``). A signature
    that fits neither (no positional parameter, more than two required, a required
    keyword-only one) is a :class:`ConfigError` of ``app_ref``, raised before any call."""
    if isinstance(function, App):
        return function
    is_async = inspect.iscoroutinefunction(function)
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a builtin or extension callable: called as fairtrace's
        return App(function, True, is_async)
    parameters = list(signature.parameters.values())
    positional = [p for p in parameters if p.kind in _POSITIONAL]
    variadic = any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in parameters)
    required = [p for p in positional if p.default is inspect.Parameter.empty]
    keyword_only = [
        p
        for p in parameters
        if p.kind == inspect.Parameter.KEYWORD_ONLY and p.default is inspect.Parameter.empty
    ]
    if len(required) > 2 or keyword_only or not (positional or variadic):
        name = getattr(function, "__qualname__", type(function).__name__)
        bare = signature.replace(
            parameters=[p.replace(annotation=p.empty) for p in parameters],
            return_annotation=signature.empty,
        )
        raise ConfigError(
            "app_ref",
            f"the app {name}{bare} fits neither app(prompt) nor app(prompt, "
            "assignments); give it one of those signatures (extra parameters need defaults).",
        )
    return App(function, variadic or len(positional) >= 2, is_async)


@dataclass(frozen=True)
class Job:
    """One call to make: the prompt, the assignments handed to the app, and the identity its
    request span carries (``name`` is the request's name)."""

    name: str
    prompt: str
    assignments: Mapping[str, str] = field(default_factory=dict)
    repeat: int = 0
    seed_id: str | None = None
    variant_id: str | None = None
    request_id: str | None = None

    def scope(self) -> RequestScope:
        return request(
            self.name,
            request_id=self.request_id,
            seed_id=self.seed_id,
            variant_id=self.variant_id,
            assignments=dict(self.assignments),
            repeat=self.repeat,
        )


@dataclass(frozen=True)
class AppCall:
    """One call of the app: its job, what came back (or the error: ``raised`` when the app
    raised, its text then ``"Type: message"``), and its assembled trace (None when no span of
    it was captured)."""

    job: Job
    text: str | None = None
    metadata: Mapping[str, Any] | None = None
    error: str | None = None
    trace: AgentTrace | None = None
    trace_id: str = ""
    raised: bool = False


def _normalise(job: Job, result: object, trace_id: str) -> AppCall:
    if isinstance(result, str):
        return AppCall(job, result, {}, trace_id=trace_id)
    if isinstance(result, Mapping) and isinstance(result.get("text"), str):
        metadata = result.get("metadata", {})
        if metadata is None:
            metadata = {}
        if not isinstance(metadata, Mapping):
            return AppCall(job, error="the app returned a 'metadata' value that is not a dict.")
        return AppCall(job, result["text"], dict(metadata), trace_id=trace_id)
    return AppCall(
        job,
        error=f"the app returned {type(result).__name__}; return a "
        "string or a dict with a 'text' string.",
    )


@dataclass(frozen=True)
class _Harness:
    app: App
    seen: Seen
    read_process: ReadProcess
    progress: Progress

    def arguments(self, job: Job) -> tuple[Any, ...]:
        if self.app.takes_assignments:
            return (job.prompt, dict(job.assignments))
        return (job.prompt,)


def _call_sync(harness: _Harness, job: Job) -> AppCall:
    with job.scope() as handle:
        record_question(handle, job.prompt)
        try:
            result = harness.app.function(*harness.arguments(job))
        except Exception as exc:  # the app's failure is data about this call, not a crash
            return AppCall(job, error=f"{type(exc).__name__}: {exc}", raised=True)
        return _recorded(handle, _normalise(job, result, _trace_id(handle)), harness)


async def _call_async(harness: _Harness, job: Job, gate: asyncio.Semaphore) -> AppCall:
    async with gate:
        with job.scope() as handle:
            record_question(handle, job.prompt)
            try:
                result = await harness.app.function(*harness.arguments(job))
            except Exception as exc:
                call = AppCall(job, error=f"{type(exc).__name__}: {exc}", raised=True)
            else:
                call = _recorded(handle, _normalise(job, result, _trace_id(handle)), harness)
        harness.progress(1)
        return call


def _trace_id(handle: Request) -> str:
    return format(handle.span.get_span_context().trace_id, "032x")


def _recorded(handle: Request, call: AppCall, harness: _Harness) -> AppCall:
    """Put what the app returned on its request span: the answer, the metadata, and a
    ``metadata["trace"]`` as spans and events (only when the app recorded no process of its
    own), so the spans alone hold everything the run evaluates."""
    if call.error is not None:
        return call
    metadata = dict(call.metadata or {})
    raw_trace = metadata.pop("trace", None)
    try:
        process = harness.read_process(raw_trace) if raw_trace is not None else None
    except InputError as exc:
        return AppCall(call.job, error=f"the app's metadata is invalid: {exc}")
    record_answer(handle, call.text or "", metadata)
    if process is not None and not harness.seen.recorded(handle):
        replay_process(process)
    return call


async def _gather(harness: _Harness, jobs: Sequence[Job], concurrency: int) -> list[AppCall]:
    gate = asyncio.Semaphore(concurrency)
    return list(await asyncio.gather(*(_call_async(harness, job, gate) for job in jobs)))


def _calls(harness: _Harness, jobs: Sequence[Job], concurrency: int) -> list[AppCall]:
    if harness.app.is_async:
        return asyncio.run(_gather(harness, jobs, concurrency))

    def one(job: Job) -> AppCall:
        call = _call_sync(harness, job)
        harness.progress(1)
        return call

    if concurrency <= 1:
        return [one(job) for job in jobs]
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        try:
            return list(pool.map(one, jobs))
        except BaseException:  # Ctrl-C: no new call starts; the ones in flight end
            pool.shutdown(wait=True, cancel_futures=True)
            raise


def _no_progress(done: int) -> None:
    return None


def call_app(
    app: Callable[..., Any] | App,
    jobs: Sequence[Job],
    read_process: ReadProcess,
    *,
    concurrency: int = 1,
    progress: Progress | None = None,
    spans_out: list[Any] | None = None,
    diagnose: bool = True,
) -> list[AppCall]:
    """Call ``app`` for every job; return the calls in the jobs' order, each with its trace.

    ``progress(n)`` is called as calls finish (from worker threads when concurrent); the
    captured OpenTelemetry spans (``ReadableSpan``) are appended to ``spans_out`` when given.
    ``diagnose=False`` skips the traces' unread-key notes (``AgentTrace.unread``), which only
    a fairness NO_SIGNAL diagnosis reads (~12 µs per call).
    """
    if concurrency < 1:
        raise InputError("concurrency must be at least 1.")
    seen = Seen()
    harness = _Harness(as_app(app), seen, read_process, progress or _no_progress)
    with SpanCapture(capture_content=False) as capture:
        capture.provider.add_span_processor(seen)

        def sink(span: ReadableSpan) -> None:
            capture.exporter.export((span,))
            seen.on_end(span)

        with app_spans(capture.provider, sink):
            calls = _calls(harness, jobs, concurrency)
    spans = capture.readable_spans()
    if spans_out is not None:
        spans_out.extend(spans)
    return _with_traces(calls, spans, diagnose)


def _with_traces(
    calls: Sequence[AppCall], spans: Sequence[ReadableSpan], diagnose: bool
) -> list[AppCall]:
    """Each successful call with the agent trace assembled from its spans (by trace id)."""
    traces = {t.trace_id: t for t in traces_from_readable_spans(spans, diagnose=diagnose)}
    out = []
    for call in calls:
        found = traces.get(call.trace_id) if call.error is None else None
        out.append(call if found is None else replace(call, trace=found))
    return out
