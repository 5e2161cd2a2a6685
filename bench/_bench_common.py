"""Shared helpers of the SDK benchmarks: a null exporter and an interleaved CPU timer."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Sequence

from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult


class NullExporter(SpanExporter):
    """Accepts every batch and does nothing: the benchmarks measure the app side only."""

    def export(self, spans: Sequence[object]) -> SpanExportResult:  # type: ignore[override]
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def per_call_ns(fn: Callable[[], object], calls: int) -> float:
    """CPU nanoseconds per call of ``fn`` over ``calls`` calls (GC paused)."""
    gc.collect()
    gc.disable()
    try:
        start = time.process_time_ns()
        for _ in range(calls):
            fn()
        return (time.process_time_ns() - start) / calls
    finally:
        gc.enable()


def interleaved(
    candidates: dict[str, Callable[[], object]], calls: int, rounds: int
) -> dict[str, float]:
    """Median CPU ns per call of each candidate, measured in alternating rounds so that
    machine load hits every candidate alike."""
    samples: dict[str, list[float]] = {name: [] for name in candidates}
    for fn in candidates.values():  # warm up
        per_call_ns(fn, max(1, calls // 10))
    for _ in range(rounds):
        for name, fn in candidates.items():
            samples[name].append(per_call_ns(fn, calls))
    return {name: statistics.median(values) for name, values in samples.items()}
