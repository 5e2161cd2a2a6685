"""Replay: the candidate app called on every case's input, K times (``cases run --app``).

The app runs in-process through the harness ``spanguard run`` uses (:mod:`...harness.calls`):
the same signatures (``app(prompt)`` or ``app(prompt, assignments)``, plain or async), the same
span capture, the same concurrency. Each call becomes the :class:`~..case.Evidence` a recorded
request would give — the output text, the process trace read from its spans, its latency and
cost — and a call that raised (or returned something that is not an answer) an
:class:`~.repeats.AppFailure`; :func:`~.run.score_repeats` scores the K runs of each case.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spanguard.exceptions import InputError

from ...harness.calls import App, AppCall, Job, Progress, call_app
from ...traces.model import ProcessTrace
from ..case import Case, Evidence
from .outputs import OutputRecord
from .repeats import AppFailure

__all__ = ["REQUEST_NAME", "Replay", "ReplayFailure", "replay_cases"]

#: The name of the request span each replayed call runs in.
REQUEST_NAME = "cases_run"
#: A call that returned no answer (not a string, nor a dict with a 'text' string) is this kind
#: of failure; a call that raised keeps its exception's type.
INVALID_ANSWER = "InvalidAnswer"


@dataclass(frozen=True)
class ReplayFailure:
    """One app call that failed: which case and repeat, and the failure."""

    case_id: str
    repeat: int
    failure: AppFailure


@dataclass(frozen=True)
class Replay:
    """Every case's runs in repeat order (``evidence``, what ``score_repeats`` reads), and
    the calls that failed."""

    evidence: Mapping[str, tuple[Evidence | AppFailure, ...]]
    failures: tuple[ReplayFailure, ...]
    calls: int

    @property
    def all_failed(self) -> bool:
        return self.calls > 0 and len(self.failures) == self.calls


def _read_process(raw: object) -> ProcessTrace:
    """An app's ``metadata["trace"]``, read as an outputs line's ``trace`` is."""
    process = OutputRecord.from_line({"trace": raw}).evidence.process
    if process is None:
        raise InputError("'trace' must be an object such as {\"tool_calls\": []}.")
    return process


def _failure(call: AppCall) -> AppFailure:
    text = call.error or ""
    kind, sep, message = text.partition(": ")
    if call.raised and sep:
        return AppFailure(kind, message)
    return AppFailure(INVALID_ANSWER, text)


def _evidence(call: AppCall) -> Evidence:
    trace = call.trace
    if trace is None:  # no span of the call was captured: what it returned is all there is
        process = _read_process(raw) if (raw := (call.metadata or {}).get("trace")) else None
        return Evidence(call.text or "", process)
    output = trace.output if trace.output is not None else call.text or ""
    return Evidence(output, trace.trace, trace.latency_ms, trace.cost_usd)


def _jobs(cases: Sequence[Case], repeats: int, source: str) -> list[Job]:
    jobs = []
    for case in cases:
        if not case.input:
            raise InputError(
                f"case {case.id!r} has no input to replay; every case needs its question.",
                file=source or None,
                field="input",
            )
        jobs += [
            Job(REQUEST_NAME, case.input, {}, r, request_id=f"{case.id}#{r}")
            for r in range(repeats)
        ]
    return jobs


def replay_cases(
    cases: Sequence[Case],
    app: Callable[..., Any] | App,
    *,
    repeats: int = 1,
    concurrency: int = 1,
    progress: Progress | None = None,
    source: str = "",
) -> Replay:
    """Call ``app`` on every case's input ``repeats`` times, ``concurrency`` at a time.

    A case without an input is an :class:`InputError` (``source`` names the case file),
    raised before the first call."""
    if repeats < 1:
        raise InputError("repeats must be at least 1.")
    jobs = _jobs(cases, repeats, source)
    calls = call_app(  # the evidence reads no unread-key notes: not computed
        app, jobs, _read_process, concurrency=concurrency, progress=progress, diagnose=False
    )
    evidence: dict[str, list[Evidence | AppFailure]] = {c.id: [] for c in cases}
    failures: list[ReplayFailure] = []
    for case_id, call in zip((c.id for c in cases for _ in range(repeats)), calls, strict=True):
        if call.error is not None:
            failure = _failure(call)
            failures.append(ReplayFailure(case_id, call.job.repeat, failure))
            evidence[case_id].append(failure)
        else:
            evidence[case_id].append(_evidence(call))
    return Replay({k: tuple(v) for k, v in evidence.items()}, tuple(failures), len(calls))
