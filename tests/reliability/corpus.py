"""Valid inputs to start fuzzing from, and the tally of how many inputs each fuzz test tried.

The seeds are real: OTLP requests encoded by the OTel SDK's own exporter code from the spans of
the processor tests' agent app, their OTLP-JSON form, assembled agent traces and fairtrace and
trace2eval records. Mutating a valid input reaches far deeper into a decoder than random bytes.
"""

from __future__ import annotations

import json
from collections import Counter
from functools import cache
from typing import Any

from google.protobuf.json_format import MessageToDict

from tests.agent_app import encoded_requests

#: fuzz test name -> inputs tried; printed in the terminal summary (see conftest.py).
TRIED: Counter[str] = Counter()
#: one line per measured figure (crash, load, SDK faults); printed in the terminal summary.
FIGURES: list[str] = []


def otlp_requests(count: int = 4) -> tuple[bytes, ...]:
    """Serialized ``ExportTraceServiceRequest`` messages, one per agent request."""
    return tuple(request.body for request in encoded_requests(count))


def hex_ids(node: Any) -> Any:
    # OTLP-JSON carries ids as hex; MessageToDict writes base64.
    if isinstance(node, dict):
        out = {k: hex_ids(v) for k, v in node.items()}
        for key in ("traceId", "spanId", "parentSpanId"):
            if isinstance(out.get(key), str) and out[key]:
                import base64

                out[key] = base64.b64decode(out[key]).hex()
        return out
    if isinstance(node, list):
        return [hex_ids(v) for v in node]
    return node


@cache
def otlp_json_documents(count: int = 4) -> tuple[str, ...]:
    """The same requests as OTLP-JSON documents (hex ids), one line each."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    docs = []
    for body in otlp_requests(count):
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        docs.append(json.dumps(hex_ids(MessageToDict(request)), separators=(",", ":")))
    return tuple(docs)


def agent_trace_line() -> str:
    """One valid assembled agent trace, as a JSONL line."""
    from spanguard_processor.ingest.batches import decode_batch
    from spanguard_processor.ingest.otlp_json import decode_document
    from spanguard_processor.traces.convert import trace_from_records

    batch = decode_document(json.loads(otlp_json_documents(1)[0]))
    record = decode_batch(batch.fmt, batch.body)
    trace = trace_from_records([record(s.position) for s in batch.spans], [], partial=False)
    return json.dumps(trace.to_dict(), sort_keys=True)


SUITE = {
    "dataset": {
        "prompts": [
            {
                "id": "s1",
                "prompt": "I am {gender}; help me.",
                "attributes": {"gender": ["a woman", "a man"]},
            }
        ]
    },
    "metrics": [{"type": "tool_use_parity"}],
}

OUTPUT_ROW = {
    "id": "case-1",
    "input": "reset password?",
    "output": "use the link",
    "latency_ms": 120.5,
    "cost_usd": 0.001,
    "feedback": "thumbs_up",
    "retried": False,
    "expect": {"contains": ["link"]},
}
