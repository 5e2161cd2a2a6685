"""An agent instrumented only with OpenInference, evaluated by spanguard as it is.

The app knows nothing of the spanguard SDK: its spans come from ``openinference-instrumentation``
(``OITracer`` with ``@tracer.agent``, ``@tracer.chain``, ``@tracer.tool`` and a retriever span
carrying ``retrieval.documents.{i}.document.{id,score,content,metadata}``) through a plain
OpenTelemetry ``TracerProvider``. The processor reads those conventions: tool spans become tool
calls, the retriever's documents become retrieved documents (group and rank from each
document's metadata).

The one thing OpenInference has no attribute for is the counterfactual identity of a request
(which suite variant it answers), so the agent span carries three plain OTel attributes from the
span contract (docs/attributes.md): ``spanguard.seed_id``, ``spanguard.variant_id`` and
``spanguard.assignment.<attr>``. A production app would set none of them; they matter only
when a fairness suite drives the app.

Run it from the repository root::

    python examples/openinference_app.py --suite examples/openinference_suite.yaml -o oi-spans.jsonl
    spanguard ingest oi-spans.jsonl --store oi.db
    spanguard traces export --store oi.db -o oi-traces.jsonl
    spanguard fairness examples/openinference_suite.yaml oi-traces.jsonl -o oi-report

(exit 0; add ``--bias`` to the first command and the last one exits 1). Instead of a file,
``--endpoint http://127.0.0.1:4318/v1/traces`` sends the spans over OTLP/HTTP to a running
``spanguard serve`` (or any Collector).

The span file is OTLP JSON, one ``ExportTraceServiceRequest`` per line (the Collector file
exporter's format), written by the small ``OtlpJsonLinesExporter`` below.
"""

from __future__ import annotations

import argparse
import base64
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from google.protobuf.json_format import MessageToDict
from openinference.instrumentation import OITracer, TraceConfig, get_retriever_attributes
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from spanguard import semconv  # attribute names only; the app does not use the SDK

__all__ = ["KNOWLEDGE_BASE", "OtlpJsonLinesExporter", "agent", "main", "make_provider"]

PROVIDER = TracerProvider(resource=Resource.create({"service.name": "openinference-app"}))
TRACER = OITracer(PROVIDER.get_tracer(__name__), config=TraceConfig())
BIASED = {"on": False, "against": "renter"}

KNOWLEDGE_BASE: tuple[dict[str, Any], ...] = (
    {"id": "policy-eligibility", "group": "policy", "text": "Eligibility depends on income."},
    {"id": "policy-documents", "group": "policy", "text": "Bring ID and two payslips."},
    {"id": "blog-tips", "group": "blog", "text": "Ten tips to get your loan approved."},
    {"id": "blog-rates", "group": "blog", "text": "Why rates went up this year."},
)


class OtlpJsonLinesExporter(SpanExporter):
    """Write each batch as one OTLP JSON ``ExportTraceServiceRequest`` line (hex ids)."""

    def __init__(self, out: IO[str]) -> None:
        self._out = out

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        request = MessageToDict(encode_spans(spans))
        for resource_spans in request.get("resourceSpans", []):
            for scope_spans in resource_spans.get("scopeSpans", []):
                for span in scope_spans.get("spans", []):
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if key in span:  # protobuf JSON writes bytes as base64; OTLP JSON wants hex
                            span[key] = _b64_to_hex(span[key])
        self._out.write(json.dumps(request, sort_keys=True) + "\n")
        self._out.flush()
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self._out.flush()


def _b64_to_hex(value: str) -> str:
    return base64.b64decode(value).hex()


@TRACER.tool(name="check_credit")
def check_credit(applicant: str) -> str:
    """A fake credit bureau lookup."""
    return f"credit file for {applicant}: no defaults"


def retrieve(question: str, policy_first: bool) -> list[dict[str, Any]]:
    """Rank the knowledge base (policy pages first unless not ``policy_first``)."""
    with TRACER.start_as_current_span(
        "retrieve_pages", openinference_span_kind="retriever"
    ) as span:
        pages = sorted(
            KNOWLEDGE_BASE, key=lambda p: ((p["group"] == "policy") != policy_first, p["id"])
        )
        span.set_attributes(
            get_retriever_attributes(
                documents=[
                    {
                        "id": p["id"],
                        "score": round(1.0 / rank, 3),
                        "content": p["text"],
                        "metadata": {"group": p["group"], "rank": rank},
                    }
                    for rank, p in enumerate(pages, start=1)
                ]
            )
        )
    return pages


@TRACER.chain(name="compose_reply")
def compose_reply(pages: list[dict[str, Any]], credit: str | None) -> str:
    """Answer from the top page (and the credit check, if one was made)."""
    parts = [pages[0]["text"]] + ([credit] if credit else [])
    return " ".join(parts)


@TRACER.agent(name="loan_agent")
def agent(question: str, assignments: Mapping[str, str]) -> str:
    """Answer a loan question; with ``BIASED["on"]`` one group gets worse treatment."""
    disfavoured = BIASED["on"] and BIASED["against"] in assignments.values()
    pages = retrieve(question, policy_first=not disfavoured)
    credit = None if disfavoured else check_credit("the applicant")
    return compose_reply(pages, credit)


def run_variant(variant_id: str, seed_id: str, prompt: str, assignments: Mapping[str, str]) -> str:
    """One request, its root span tagged with the variant's identity."""
    identity: dict[str, str] = {semconv.SEED_ID: seed_id, semconv.VARIANT_ID: variant_id}
    identity.update({semconv.assignment_key(k): v for k, v in assignments.items()})
    with TRACER.start_as_current_span(
        "loan_request", attributes=identity, openinference_span_kind="agent"
    ) as span:
        span.set_input(prompt)
        reply = agent(prompt, assignments)
        span.set_output(reply)
    return reply


def make_provider(out: IO[str] | None, endpoint: str | None) -> TracerProvider:
    """Attach a file (OTLP JSON lines) or OTLP/HTTP exporter to the module's provider."""
    if endpoint:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        PROVIDER.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    if out is not None:
        PROVIDER.add_span_processor(SimpleSpanProcessor(OtlpJsonLinesExporter(out)))
    return PROVIDER


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--suite", type=Path, required=True, help="fairness suite to drive")
    parser.add_argument("-o", "--output", type=Path, help="OTLP JSON-lines span file to write")
    parser.add_argument(
        "--endpoint", help="OTLP/HTTP traces URL, e.g. http://127.0.0.1:4318/v1/traces"
    )
    parser.add_argument("--bias", action="store_true", help="treat renters worse")
    args = parser.parse_args(argv)
    if args.output is None and args.endpoint is None:
        parser.error("give -o FILE, --endpoint URL or both")
    from spanguard_processor.fairness import suite_variants  # the suite's variants, as dicts

    BIASED["on"] = args.bias
    out = args.output.open("w", encoding="utf-8") if args.output else None
    try:
        make_provider(out, args.endpoint)
        variants = suite_variants(args.suite)
        for variant in variants:
            run_variant(
                variant["id"], variant["seed_id"], variant["prompt"], variant["assignments"]
            )
        PROVIDER.shutdown()
    finally:
        if out is not None:
            out.close()
    print(f"{len(variants)} requests traced")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
