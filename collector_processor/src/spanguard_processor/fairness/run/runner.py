"""Run an app in-process over every variant of a suite and turn its spans into observations.

The app has fairtrace's signature ``app(prompt, assignments)``, or takes the prompt alone
(``app(prompt)``), and returns text, or a dict
``{"text": str, "metadata": {...}}``; the shared harness (:mod:`...harness.calls`) calls it once
per variant and repeat inside a spanguard request that carries the variant's counterfactual
identity, captures every span it emits and assembles them, and the run reads them exactly as a
span file of them is read by ``spanguard fairness``: the run's verdict and its ``--traces-out``
file's agree. The request's own events are its process (an app whose only signal is
``spanguard.escalate()`` is read like any other). An app that emits no process of its own may
return its trace as ``metadata["trace"]`` (fairtrace's shape) instead; it is recorded as the
spans the SDK would have emitted. An exception in one variant is recorded for that variant and
the rest still run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from spanguard.exceptions import InputError

from ...harness.calls import App, AppCall, Job, Progress, call_app
from ..design.suite import Variant
from ..records import Observation, observation_from_trace, parse_fairtrace_trace

__all__ = ["Progress", "run_app"]


def _no_progress(done: int) -> None:
    return None


def _job(variant: Variant, repeat: int) -> Job:
    return Job(
        "fairness_run",
        variant.prompt,
        dict(variant.assignments),
        repeat,
        seed_id=variant.seed_id,
        variant_id=variant.id,
    )


def run_app(
    app: Callable[..., Any] | App,
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
    pairs = [(v, r) for v in variants for r in range(repeats)]
    calls = call_app(
        app,
        [_job(v, r) for v, r in pairs],
        parse_fairtrace_trace,
        concurrency=concurrency,
        progress=progress,
        spans_out=spans_out,
    )
    observations, errors = [], []
    for (variant, repeat), call in zip(pairs, calls, strict=True):
        if call.error is not None:
            errors.append({"id": variant.id, "repeat": repeat, "error": call.error})
            continue
        found = call.trace if call.trace is not None and call.trace.variant_id is not None else None
        # the spans are the record, read as every other path reads them (issue 36: one
        # verdict on every path); a call whose spans were not recorded keeps what it returned
        observations.append(
            observation_from_trace(found) if found is not None else _observation(variant, call)
        )
    return observations, errors


def _observation(v: Variant, call: AppCall) -> Observation:
    metadata = dict(call.metadata or {})
    raw_trace = metadata.pop("trace", None)
    return Observation(
        id=f"{v.id}#{call.job.repeat}" if call.job.repeat else v.id,
        seed_id=v.seed_id,
        variant_id=v.id,
        assignments=dict(v.assignments),
        prompt=v.prompt,
        response=call.text or "",
        metadata=metadata,
        trace=parse_fairtrace_trace(raw_trace) if raw_trace is not None else None,
    )
