"""Time and peak memory of ``traces export`` and ``fairness`` on one big span store (issue 50).

The store holds a counterfactual run of --seeds seeds × 2 groups (the 5-span agent request of
``tests/agent_app.py``: root, plan, retrieval, tool call, chat), each variant
recorded again and again (``spanguard.repeat`` 0, 1, …, fresh trace ids; a helpfulness score
that varies with the repeat) until the store holds --spans spans; every trace released. It is
built once under --dir (default /work/scale, outside the repository) with the suite beside it,
and reused. Build it niced; the 10M-span store (~7.5 GB) takes a while.

``fairness --stream`` (the records reduced to the sufficient table as they are read) runs
beside ``fairness``; its verdicts and figures are compared with the records path's report.

Each command runs as a child process (``python -m spanguard_processor``), measured as
``/usr/bin/time -v`` does: wall time, CPU time and the child's peak RSS (``os.wait4``).
With ``--baseline SRC`` (the ``collector_processor/src`` folder of another checkout, e.g.
``git archive main collector_processor/src | tar -x``) the same commands run with that code
too, on the same store, and the outputs are compared byte for byte (``report.json`` with a
fixed ``SOURCE_DATE_EPOCH``; the exported JSONL).

    nice -n 10 .venv/bin/python bench/bench_scale.py --spans 1000000   # builds in ~20 s
    nice -n 10 .venv/bin/python bench/bench_scale.py --quick           # 100k spans
    nice -n 10 .venv/bin/python bench/bench_scale.py --build-only      # 10M: 24 min at load 10

Results: docs/benchmarks-processor.md, "Issue 50: one big store, streamed".
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spanguard import semconv as sc  # noqa: E402
from spanguard_processor.collector.limits import Shaper  # noqa: E402
from spanguard_processor.ingest.codec_protobuf import PROTOBUF_CODEC  # noqa: E402
from spanguard_processor.store.span_store import SpanStore  # noqa: E402
from tests.agent_app import SPANS_PER_REQUEST, run_request  # noqa: E402

_METRICS = (
    "  - {type: helpfulness_gap, threshold: 0.1}\n"
    "  - {type: escalation_parity, threshold: 0.1}\n"
    "  - {type: retrieval_exposure_gap, threshold: 0.2, max_difference: 1}\n"
    "  - {type: tool_count_gap, threshold: 0.5}\n"
)
_PER_BODY = 100  # requests per stored batch (500 spans: an exporter's batch)


def write_suite(path: Path, seeds: int) -> None:
    """The suite of the store's run: explicit variants named as ``run_request`` names them."""
    lines = ["dataset:", "  variants:"]
    for index in range(2 * seeds):
        seed = f"seed-{index // 2}"
        lines.append(
            f"    - {{id: '{seed}::{index % 2}', seed_id: {seed}, prompt: 'Question number "
            f"{index}: how do I reset my password?', assignments: {{gender: "
            f"{('woman', 'man')[index % 2]}}}}}"
        )
    path.write_text("\n".join(lines) + "\nmetrics:\n" + _METRICS, encoding="utf-8")


def _templates(seeds: int) -> list[ExportTraceServiceRequest]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("bench-scale")
    for index in range(2 * seeds):
        run_request(tracer, index)
    spans = list(exporter.get_finished_spans())
    step = _PER_BODY * SPANS_PER_REQUEST
    return [encode_spans(spans[at : at + step]) for at in range(0, len(spans), step)]


def _duration(templates: list[ExportTraceServiceRequest]) -> int:
    """Nanoseconds from the first span's start to the last one's end, plus a millisecond."""
    spans = [
        span
        for t in templates
        for resource in t.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]
    first = min(span.start_time_unix_nano for span in spans)
    return max(span.end_time_unix_nano for span in spans) - first + 1_000_000


def _copy(template: ExportTraceServiceRequest, repeat: int, shift: int) -> bytes:
    """The template's requests as repeat ``repeat``: fresh trace ids, times ``shift`` ns later
    (so the store's start order is its batch order, as live traffic stores it), the repeat and
    a helpfulness score that varies with it."""
    fresh = ExportTraceServiceRequest()
    fresh.CopyFrom(template)
    prefix = repeat.to_bytes(4, "big")
    score_key = sc.metadata_key("helpfulness_score")
    for resource in fresh.resource_spans:
        for scope in resource.scope_spans:
            for span in scope.spans:
                span.trace_id = prefix + span.trace_id[4:]
                span.start_time_unix_nano += shift
                span.end_time_unix_nano += shift
                for event in span.events:
                    event.time_unix_nano += shift
                if span.parent_span_id:
                    continue
                for attribute in span.attributes:
                    if attribute.key == sc.REPEAT:
                        attribute.value.int_value = repeat
                    elif attribute.key == score_key:
                        attribute.value.double_value = ((repeat * 7 + span.trace_id[-1]) % 11) / 10
    return fresh.SerializeToString()


def build_store(path: Path, spans: int, seeds: int) -> None:
    """A store of ``spans`` spans (the run repeated), written to ``path`` once."""
    templates = _templates(seeds)
    repeats = max(1, spans // (2 * seeds * SPANS_PER_REQUEST))
    partial = path.with_name(path.name + ".partial")
    for stale in (partial, Path(f"{partial}-wal"), Path(f"{partial}-shm")):
        stale.unlink(missing_ok=True)
    shaping = Shaper().shaping
    duration = _duration(templates)
    started = time.perf_counter()
    with SpanStore(partial, durable=False) as store:
        for repeat in range(repeats):
            batches = [
                PROTOBUF_CODEC.decode(_copy(t, repeat, repeat * duration), None, shaping)
                for t in templates
            ]
            store.put_batches(
                batches, release=sorted({g.trace_id for b in batches for g in b.traces})
            )
            if repeat % 50 == 49:
                print(f"  built {repeat + 1}/{repeats} repeats", flush=True)
    partial.rename(path)
    print(f"built {path} ({repeats} repeats) in {time.perf_counter() - started:.0f} s")


def measure(argv: list[str], src: Path | None) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB) of ``python -m spanguard_processor ARGV`` as a child."""
    env = {**os.environ, "SOURCE_DATE_EPOCH": "0"}
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src), env.get("PYTHONPATH")]))
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "spanguard_processor", *argv],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    error = child.stderr.read().decode() if child.stderr else ""
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed ({child.returncode}): {error[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def _commands(store: Path, suite: Path, out: Path) -> dict[str, list[str]]:
    return {
        "traces export": [
            "traces",
            "export",
            "--store",
            str(store),
            "-o",
            str(out / "agent.jsonl"),
        ],
        "fairness": [
            "fairness",
            str(suite),
            str(store),
            "-o",
            str(out / "report"),
            "--format",
            "json",
        ],
        "fairness --stream": [
            "fairness",
            str(suite),
            str(store),
            "--stream",
            "-o",
            str(out / "report-stream"),
            "--format",
            "json",
        ],
    }


def compare_stream(streamed: Path, records: Path) -> None:
    """A --stream report against a records-path report of the same store: verdicts, and the
    largest relative difference of the figures both hold (per-record values and evidence are
    the records path's only)."""
    a = json.loads(records.read_text(encoding="utf-8"))["metric_results"]
    b = json.loads(streamed.read_text(encoding="utf-8"))["metric_results"]
    verdicts = [(r["metric"], r["verdict"]) for r in a]
    same = verdicts == [(r["metric"], r["verdict"]) for r in b]
    worst = 0.0
    for ra, rb in zip(a, b, strict=True):
        for key in ("score", "p_value", "p_value_holm", "minimum_detectable_effect"):
            x, y = ra.get(key), rb.get(key)
            if isinstance(x, float) and isinstance(y, float) and x != y:
                worst = max(worst, abs(x - y) / max(abs(x), abs(y)))
        shown = ra.get("confidence_interval") or (), rb.get("confidence_interval") or ()
        for x, y in zip(*shown, strict=False):
            if x != y:
                worst = max(worst, abs(x - y) / max(abs(x), abs(y)))
    print(
        f"--stream against {records}: verdicts {'identical' if same else 'DIFFERENT'} "
        f"{verdicts}; largest relative difference of score, p, MDE, interval: {worst:.1e}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spans", type=int, default=10_000_000)
    parser.add_argument("--seeds", type=int, default=1000, help="seeds of the run (× 2 groups)")
    parser.add_argument("--dir", type=Path, default=Path("/work/scale"))
    parser.add_argument("--quick", action="store_true", help="100k spans")
    parser.add_argument("--baseline", type=Path, help="another checkout's collector_processor/src")
    parser.add_argument(
        "--only",
        choices=("traces export", "fairness", "fairness --stream"),
        help="run one command",
    )
    parser.add_argument("--store", type=Path, help="an existing store (else built under --dir)")
    parser.add_argument("--build-only", action="store_true", help="build the store, run nothing")
    args = parser.parse_args()
    spans = 100_000 if args.quick else args.spans
    args.dir.mkdir(parents=True, exist_ok=True)
    store = args.store or args.dir / f"store-{spans}-{args.seeds}-timed.db"
    suite = args.dir / f"suite-{args.seeds}.yaml"
    if not suite.exists():
        write_suite(suite, args.seeds)
    if not store.exists():
        build_store(store, spans, args.seeds)
    traces = spans // SPANS_PER_REQUEST
    if args.build_only:
        return
    print(f"store {store}: {spans} spans, {traces} traces, {store.stat().st_size / 1e9:.2f} GB")
    runs = [("this", None)] + ([("baseline", args.baseline)] if args.baseline else [])
    for name, src in runs:
        out = args.dir / f"out-{spans}-{name}"
        out.mkdir(exist_ok=True)
        for label, argv in _commands(store, suite, out).items():
            if args.only and label != args.only:
                continue
            wall, cpu, rss = measure(argv, src)
            print(
                f"{name:<9} {label:<14} wall {wall:7.1f} s  CPU {cpu:7.1f} s "
                f"({cpu / traces * 1e3:.3f} ms/trace)  peak RSS {rss:7.0f} MB"
            )
    if args.baseline:
        this, base = args.dir / f"out-{spans}-this", args.dir / f"out-{spans}-baseline"
        for name in ("agent.jsonl", "report/report.json", "report/report.md"):
            if (this / name).exists() and (base / name).exists():
                same = filecmp.cmp(this / name, base / name, shallow=False)
                print(f"{name}: {'byte-identical' if same else 'DIFFERENT'} to the baseline's")
    for name, _ in runs:
        out = args.dir / f"out-{spans}-{name}"
        streamed = out / "report-stream" / "report.json"
        for records in (
            out / "report" / "report.json",
            args.dir / f"out-{spans}-baseline/report/report.json",
        ):
            if streamed.exists() and records.exists():
                compare_stream(streamed, records)


if __name__ == "__main__":
    main()
