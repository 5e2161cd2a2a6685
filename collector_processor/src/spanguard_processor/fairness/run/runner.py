"""Run an app in-process over every variant of a suite and turn its spans into observations.

The app has fairtrace's signature ``app(prompt, assignments)`` and returns text, or a dict
``{"text": str, "metadata": {...}}``; plain functions run in a thread pool, coroutine functions
on one event loop, ``concurrency`` at a time. Every call runs inside a spanguard request that
carries the variant's counterfactual identity, the prompt and the app's answer
(:mod:`.recording`). The spans the app emits — through the SDK or its other OpenTelemetry
tracers (:mod:`.capture`) — are captured in memory, assembled, and read exactly as a span file
of them is read by ``spanguard fairness``: the run's verdict and its ``--traces-out`` file's
agree. The request's own events are its process (an app whose only signal is
``spanguard.escalate()`` is read like any other). An app that emits no process of its own may
return its trace as ``metadata["trace"]`` (fairtrace's shape) instead; it is recorded as the
spans the SDK would have emitted. An exception in one variant is recorded for that variant and
the rest still run.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from spanguard import Request, RequestScope, request
from spanguard.exceptions import InputError
from spanguard.testing import SpanCapture

from ...traces.convert import traces_from_readable_spans
from ...traces.model import AgentTrace
from ..design.suite import Variant
from ..records import Observation, observation_from_trace, parse_fairtrace_trace
from .capture import app_spans
from .recording import Seen, record_answer, record_question, replay_process

__all__ = ["AppCall", "Progress", "run_app"]

Progress = Callable[[int], None]


@dataclass(frozen=True)
class AppCall:
    """One call of the app: a variant, a repeat, and what came back (or the error)."""

    variant: Variant
    repeat: int
    text: str | None = None
    metadata: Mapping[str, Any] | None = None
    error: str | None = None

    @property
    def key(self) -> tuple[str, int]:
        return (self.variant.id, self.repeat)


def _normalise(variant: Variant, repeat: int, result: object) -> AppCall:
    if isinstance(result, str):
        return AppCall(variant, repeat, result, {})
    if isinstance(result, Mapping) and isinstance(result.get("text"), str):
        metadata = result.get("metadata", {})
        if metadata is None:
            metadata = {}
        if not isinstance(metadata, Mapping):
            return AppCall(
                variant, repeat, error="the app returned a 'metadata' value that is not a dict."
            )
        return AppCall(variant, repeat, result["text"], dict(metadata))
    return AppCall(
        variant,
        repeat,
        error=f"the app returned {type(result).__name__}; return a "
        "string or a dict with a 'text' string.",
    )


def _scope(variant: Variant, repeat: int) -> RequestScope:
    return request(
        "fairness_run",
        seed_id=variant.seed_id,
        variant_id=variant.id,
        assignments=dict(variant.assignments),
        repeat=repeat,
    )


def _call_sync(app: Callable[..., Any], variant: Variant, repeat: int, seen: Seen) -> AppCall:
    with _scope(variant, repeat) as handle:
        record_question(handle, variant.prompt)
        try:
            result = app(variant.prompt, dict(variant.assignments))
        except Exception as exc:  # the app's failure is data about this variant, not a crash
            return AppCall(variant, repeat, error=f"{type(exc).__name__}: {exc}")
        return _recorded(handle, _normalise(variant, repeat, result), seen)


async def _call_async(
    app: Callable[..., Any],
    variant: Variant,
    repeat: int,
    gate: asyncio.Semaphore,
    progress: Progress,
    seen: Seen,
) -> AppCall:
    async with gate:
        with _scope(variant, repeat) as handle:
            record_question(handle, variant.prompt)
            try:
                result = await app(variant.prompt, dict(variant.assignments))
            except Exception as exc:
                call = AppCall(variant, repeat, error=f"{type(exc).__name__}: {exc}")
            else:
                call = _recorded(handle, _normalise(variant, repeat, result), seen)
        progress(1)
        return call


def _recorded(handle: Request, call: AppCall, seen: Seen) -> AppCall:
    """Put what the app returned on its request span: the answer, the metadata, and a
    fairtrace-shaped ``metadata["trace"]`` as spans and events (only when the app recorded no
    process of its own), so the spans alone hold everything the run evaluates."""
    if call.error is not None:
        return call
    metadata = dict(call.metadata or {})
    raw_trace = metadata.pop("trace", None)
    try:
        process = parse_fairtrace_trace(raw_trace) if raw_trace is not None else None
    except InputError as exc:
        return AppCall(call.variant, call.repeat, error=f"the app's metadata is invalid: {exc}")
    record_answer(handle, call.text or "", metadata)
    if process is not None and not seen.recorded(handle):
        replay_process(process)
    return call


async def _gather(
    app: Callable[..., Any],
    jobs: list[tuple[Variant, int]],
    concurrency: int,
    progress: Progress,
    seen: Seen,
) -> list[AppCall]:
    gate = asyncio.Semaphore(concurrency)
    return list(
        await asyncio.gather(*(_call_async(app, v, r, gate, progress, seen) for v, r in jobs))
    )


def _calls(
    app: Callable[..., Any],
    jobs: list[tuple[Variant, int]],
    concurrency: int,
    progress: Progress,
    seen: Seen,
) -> list[AppCall]:
    if inspect.iscoroutinefunction(app):
        return asyncio.run(_gather(app, jobs, concurrency, progress, seen))

    def one(job: tuple[Variant, int]) -> AppCall:
        call = _call_sync(app, *job, seen)
        progress(1)
        return call

    if concurrency <= 1:
        return [one(job) for job in jobs]
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        return list(pool.map(one, jobs))


def _no_progress(done: int) -> None:
    return None


def run_app(
    app: Callable[..., Any],
    variants: Sequence[Variant],
    *,
    repeats: int = 1,
    concurrency: int = 1,
    progress: Progress = _no_progress,
    spans_out: list[Any] | None = None,
) -> tuple[list[Observation], list[dict[str, Any]]]:
    """Call ``app`` for every variant ``repeats`` times; return observations and errors.

    ``progress(n)`` is called as calls finish (from worker threads when concurrent); the
    captured OpenTelemetry spans (``ReadableSpan``) are appended to ``spans_out`` when given.
    """
    if repeats < 1 or concurrency < 1:
        raise InputError("repeats and concurrency must be at least 1.")
    jobs = [(v, r) for v in variants for r in range(repeats)]
    seen = Seen()
    with SpanCapture(capture_content=False) as capture:
        capture.provider.add_span_processor(seen)

        def sink(span: ReadableSpan) -> None:
            capture.exporter.export((span,))
            seen.on_end(span)

        with app_spans(capture.provider, sink):
            calls = _calls(app, jobs, concurrency, progress, seen)
    spans = capture.readable_spans()
    if spans_out is not None:
        spans_out.extend(spans)
    traces: dict[tuple[str, int], AgentTrace] = {}
    for trace in traces_from_readable_spans(spans):
        if trace.variant_id is not None:
            traces[(trace.variant_id, trace.repeat)] = trace
    observations, errors = [], []
    for call in calls:
        if call.error is not None:
            errors.append({"id": call.variant.id, "repeat": call.repeat, "error": call.error})
            continue
        found = traces.get(call.key)
        # the spans are the record, read as every other path reads them (issue 36: one
        # verdict on every path); a call whose spans were not recorded keeps what it returned
        observations.append(
            observation_from_trace(found) if found is not None else _observation(call)
        )
    return observations, errors


def _observation(call: AppCall) -> Observation:
    v = call.variant
    metadata = dict(call.metadata or {})
    raw_trace = metadata.pop("trace", None)
    return Observation(
        id=f"{v.id}#{call.repeat}" if call.repeat else v.id,
        seed_id=v.seed_id,
        variant_id=v.id,
        assignments=dict(v.assignments),
        prompt=v.prompt,
        response=call.text or "",
        metadata=metadata,
        trace=parse_fairtrace_trace(raw_trace) if raw_trace is not None else None,
    )
