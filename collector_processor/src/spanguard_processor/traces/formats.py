"""Converters from an assembled :class:`AgentTrace` to the two compatible formats.

* A **fairtrace scenario record** ``{id, seed_id, prompt, assignments, response,
  response_metadata}`` whose ``response_metadata.trace`` passes fairtrace 0.1.0's trace
  validation unchanged. Everything fairtrace has no field for goes under
  ``response_metadata.spanguard``, so :func:`from_fairtrace_record` restores the trace exactly.
* A **trace2eval log row** ``{id, input, output, latency_ms, cost_usd, feedback, retried,
  expect}`` that trace2eval-cli 0.5.1's ``build`` loads without skipping, plus the process trace,
  identity, model calls (``llm_calls``) and their totals (``usage``) under keys trace2eval
  ignores.

Model calls and their totals travel in the agent format as ``llm_calls`` / ``usage`` and in
fairtrace records under ``response_metadata.spanguard`` (a block fairtrace ignores).
"""

from __future__ import annotations

from typing import Any

from spanguard.exceptions import TraceFormatError

from .model import AgentTrace, ProcessTrace

__all__ = ["from_fairtrace_record", "to_fairtrace_record", "to_trace2eval_row", "trace2eval_input"]


def _fairtrace_trace(process: ProcessTrace) -> dict[str, Any]:
    # fairtrace requires every document to name its group; documents without one (e.g. from an
    # OpenInference retriever) stay in the spanguard block instead.
    trace: dict[str, Any] = {
        "tool_calls": [{"name": t.name} for t in process.tool_calls],
        "retrieved_documents": [d.to_dict() for d in process.retrieved_documents if d.group],
        "plan_steps": list(process.plan_steps),
        "escalated": process.escalated,
        "friction_points": list(process.friction_points),
    }
    if process.escalation_reason is not None:
        trace["escalation_reason"] = process.escalation_reason
    return trace


def to_fairtrace_record(trace: AgentTrace) -> dict[str, Any]:
    """The fairtrace scenario record for one agent trace (lossless)."""
    variant = trace.variant_id or trace.request_id or trace.trace_id
    metadata: dict[str, Any] = dict(trace.metadata)
    metadata["trace"] = _fairtrace_trace(trace.trace)
    # Fields fairtrace has no place for; input/output stay here only when absent, so that a
    # trace recorded with content capture off round-trips as None rather than "".
    rest = trace.to_dict()
    for moved in ("assignments", "metadata", "trace"):
        del rest[moved]
    for text in ("seed_id", "input", "output"):
        if rest[text] is not None:
            del rest[text]
    if any(not d.group for d in trace.trace.retrieved_documents) or any(
        t.requested or t.id is not None for t in trace.trace.tool_calls
    ):
        rest["trace"] = trace.trace.to_dict()
    metadata["spanguard"] = rest
    return {
        "id": variant,
        "seed_id": trace.seed_id if trace.seed_id is not None else variant,
        "prompt": trace.input if trace.input is not None else "",
        "assignments": dict(sorted(trace.assignments.items())),
        "response": trace.output if trace.output is not None else "",
        "response_metadata": metadata,
    }


def from_fairtrace_record(record: dict[str, Any]) -> AgentTrace:
    """The inverse of :func:`to_fairtrace_record` for records it wrote."""
    metadata = dict(record.get("response_metadata") or {})
    extra = metadata.pop("spanguard", None)
    if not isinstance(extra, dict):
        raise TraceFormatError(
            "this record was not written by spanguard (no response_metadata.spanguard block).",
            field="response_metadata.spanguard",
        )
    process = metadata.pop("trace", {})
    data = dict(extra)
    process = data.pop("trace", process)
    data.setdefault("input", record.get("prompt"))
    data.setdefault("output", record.get("response"))
    data.setdefault("seed_id", record.get("seed_id"))
    data.update(
        assignments=record.get("assignments", {}),
        metadata=metadata,
        trace=process,
    )
    return AgentTrace.from_dict(data)


def trace2eval_input(trace: AgentTrace) -> str:
    """The trace's input text: the question a trace2eval row (and so a mined case) needs.

    Raises :class:`TraceFormatError` (field ``input``) when the trace has none (content capture
    was off when it was recorded): trace2eval cannot mine a case without the question.
    """
    if trace.input is None or not trace.input.strip():
        raise TraceFormatError(
            f"trace {trace.trace_id} has no input text; record it with content capture on "
            "(configure(capture_content=True)) to mine regression cases from it.",
            field="input",
        )
    return trace.input


def to_trace2eval_row(trace: AgentTrace) -> dict[str, Any]:
    """The trace2eval log row for one agent trace.

    Raises :class:`TraceFormatError` when the trace has no input text
    (:func:`trace2eval_input`).
    """
    question = trace2eval_input(trace)
    row: dict[str, Any] = {
        "id": trace.request_id or trace.trace_id,
        "input": question,
        "output": trace.output if trace.output is not None else "",
        "latency_ms": trace.latency_ms,
        "cost_usd": trace.cost_usd,
        "feedback": trace.feedback,
        "retried": trace.retried,
        "expect": dict(trace.expect) if trace.expect else None,
        "trace_id": trace.trace_id,
        "seed_id": trace.seed_id,
        "variant_id": trace.variant_id,
        "assignments": dict(sorted(trace.assignments.items())),
        "trace": trace.trace.to_dict(),
    }
    if trace.llm_calls:
        row["llm_calls"] = [c.to_dict() for c in trace.llm_calls]
        row["usage"] = trace.usage
    return row
