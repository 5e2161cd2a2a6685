"""`cases build` and `suite mine` through `--source` (DuckDB over Parquet) against the file
path (the spans converted in Python, exported as agent-trace JSONL, then read), in one run.

Traffic: bench_sql_map.py's generator (agent traces of 5 spans, the exporter's columns), with
questions that mention a gender ("Can she see where order 123 is?") and a sender (`user.id`,
500 users), so both the case miner and the suite miner have work; every third trace carries
negative feedback on its root. Each path runs in its own process (peak RSS is its own):

* ``source``: `read_source` (the SQL map and the outcome scan in DuckDB) → `build_evalset`
  and `run_mining` on the traces that come back;
* ``file``: the spans read as records (not timed: a store read costs more), converted by the
  one Python conversion, written as JSONL (the export), then `build_evalset` and
  `run_mining` read that file.

Both must write the same cases.jsonl and suite file (checked: the run fails otherwise).
Usage: ``nice -n 10 python bench/bench_source_commands.py --spans 500000`` (``--quick``:
100,000 spans).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_sql_map import GENERATE

_TEXT = "'input.value': 'Where is my order ' || t || '?',"
_MENTION = (
    "'input.value': CASE WHEN t % 2 = 0 THEN 'Can she see where order ' "
    "ELSE 'Can he see where order ' END || t || ' is?', 'user.id': 'u' || (t % 500), "
    "'spanguard.feedback': CASE WHEN t % 3 = 0 THEN 'negative' ELSE 'positive' END,"
)


def _generate(spans: int, path: Path) -> None:
    import duckdb

    assert _TEXT in GENERATE, "bench_sql_map's generator changed: update _TEXT"
    duckdb.execute(GENERATE.replace(_TEXT, _MENTION).format(spans=spans, path=path))


class _Clock:
    """Wall and CPU seconds of one phase (CPU: this process's, DuckDB's threads included)."""

    def __init__(self, timings: dict[str, float], name: str) -> None:
        self.timings, self.name = timings, name

    def __enter__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def __exit__(self, *exc: object) -> None:
        self.timings[f"{self.name}_seconds"] = time.perf_counter() - self.wall
        self.timings[f"{self.name}_cpu"] = time.process_time() - self.cpu


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def _commands(inputs: Any, work: Path, timings: dict[str, float]) -> dict[str, Any]:
    from spanguard_processor.mining.run import MineRequest, run_mining
    from spanguard_processor.regression.mine.build import BuildOptions, build_evalset

    with _Clock(timings, "build"):
        built = build_evalset(inputs, BuildOptions(out=work / "evalset"))
    files = () if not isinstance(inputs, list) else tuple(inputs)
    recorded = None if isinstance(inputs, list) else inputs
    with _Clock(timings, "mine"):
        mined = run_mining(MineRequest(paths=files, recorded=recorded), work / "mined.yaml")
    return {
        "cases": len(built.cases),
        "cases_sha": _digest(work / "evalset" / "cases.jsonl"),
        "seeds": len(mined.seeds),
        "suite_sha": _digest(work / "mined.yaml") if mined.seeds else None,
    }


def _stage_source(path: Path, work: Path) -> dict[str, Any]:
    from spanguard_processor.inputs.evaluation import RecordedTraces
    from spanguard_processor.inputs.sql_source import open_engine, parse_source, read_source

    engine = open_engine(parse_source(f"parquet://{path}"))
    engine.run(f"SET memory_limit = '700MB'; SET threads = 2; SET temp_directory = '{work}/spill'")
    timings: dict[str, float] = {}
    with _Clock(timings, "read"):
        read = read_source(engine, outcomes=True)
    recorded = RecordedTraces(str(path), tuple(read.traces))
    result = _commands(recorded, work, timings)
    return {**result, **timings, "traces": len(read.traces), "mapped": read.mapped}


def _stage_file(path: Path, work: Path) -> dict[str, Any]:
    import duckdb

    from spanguard_processor.traces.convert import traces_from_records
    from spanguard_processor.traces.sqlmap import typed_span

    cursor = duckdb.execute(
        "SELECT TraceId, SpanId, ParentSpanId, SpanName, epoch_ns(Timestamp) AS start_ns, "
        'Duration, SpanAttributes, list_transform("Events.Timestamp", lambda t: epoch_ns(t)) '
        'AS ev_t, "Events.Name" AS ev_n, "Events.Attributes" AS ev_a '
        f"FROM read_parquet('{path}')"
    )
    names = [d[0] for d in cursor.description]
    records = [typed_span(dict(zip(names, row, strict=True))) for row in cursor.fetchall()]
    timings: dict[str, float] = {}
    with _Clock(timings, "read"):
        traces = traces_from_records(records, diagnose=False)
    del records
    exported = work / "traces.jsonl"
    with _Clock(timings, "export"), exported.open("w", encoding="utf-8") as out:
        for trace in traces:
            out.write(json.dumps(trace.to_dict(), ensure_ascii=False) + "\n")
    count = len(traces)
    del traces
    result = _commands([exported], work, timings)
    return {**result, **timings, "traces": count}


def _child(stage: str, path: Path, work: Path) -> dict[str, Any]:
    work.mkdir(parents=True, exist_ok=True)
    result = _stage_source(path, work) if stage == "source" else _stage_file(path, work)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result["peak_rss_mb"] = round(usage.ru_maxrss / 1024, 1)
    result["process_cpu_seconds"] = round(usage.ru_utime + usage.ru_stime, 2)
    return {k: round(v, 2) if isinstance(v, float) else v for k, v in result.items()}


def _run_child(stage: str, path: Path, work: Path) -> dict[str, Any]:
    argv = [sys.executable, __file__, "--stage", stage, "--parquet", str(path)]
    out = subprocess.run(
        [*argv, "--work", str(work / stage)], check=False, capture_output=True, text=True
    )
    if out.returncode:
        raise SystemExit(f"{stage} failed: {out.stderr.strip()[-2000:]}")
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spans", type=int, default=500_000)
    parser.add_argument("--quick", action="store_true", help="100,000 spans")
    parser.add_argument("--stage", choices=("source", "file"))
    parser.add_argument("--parquet", type=Path)
    parser.add_argument("--work", type=Path)
    args = parser.parse_args()
    if args.stage:
        print(json.dumps(_child(args.stage, args.parquet, args.work)))
        return
    spans = 100_000 if args.quick else args.spans
    with tempfile.TemporaryDirectory(prefix="bench-source-") as tmp:
        work = Path(tmp)
        path = work / "spans.parquet"
        _generate(spans, path)
        results = {stage: _run_child(stage, path, work) for stage in ("source", "file")}
    same = all(results["source"][key] == results["file"][key] for key in ("cases_sha", "suite_sha"))
    report = {"spans": spans, "traces": spans // 5, **results, "identical": same}
    print(json.dumps(report, indent=2))
    if not same:
        raise SystemExit("the two paths wrote different files")


if __name__ == "__main__":
    main()
