"""Run history: every evaluation written to an output folder appends one line to
``history.jsonl`` there, and the reports gain each metric's trend against the previous runs.

An entry is fairtrace's history entry (``generated_at, variant_count, failure_count,
failed_metrics, metrics{name: {score, passed, direction}}``) plus what makes a trend
interpretable: each metric's threshold, verdict and interval, the suite's hash and the
spanguard version. The file is append-only JSON lines, so a crash can never damage the
runs already recorded. ``spanguard compare`` reads an entry as a report: pass
``DIR/history.jsonl`` (the latest run), ``DIR/history.jsonl@-2`` (the one before it) or
``@0`` (the first); fairtrace's ``history.json`` (a JSON list) is read the same way.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from html import escape
from pathlib import Path
from typing import Any

from spanguard.exceptions import InputError

from ...common._json import parse_json
from ...common.jsonio import write_text_atomic
from ...common.writes import append_text, write_chunks_atomic
from ..gate.results import Evaluation, Verdict
from ..vocabulary import Direction
from .verdict_text import label

__all__ = [
    "HISTORY_FILE",
    "default_label",
    "find_histories",
    "history_entry",
    "history_summary",
    "is_history_reference",
    "load_history",
    "record_run",
    "report_from_history",
    "run_verdict",
    "trend_lines",
    "trend_points",
    "trend_rows",
]

HISTORY_FILE = "history.jsonl"
TREND_RUNS = 5  # previous runs shown in the trend columns


def _finite(value: Any) -> Any:
    return value if not isinstance(value, float) or math.isfinite(value) else None


def default_label(directory: Path) -> str | None:
    """The current git commit (short) of the work tree ``directory`` is in, else None."""
    import subprocess

    start = directory if directory.exists() else Path.cwd()
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=start,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and commit else None


def history_entry(ev: Evaluation, version: str, label: str | None = None) -> dict[str, Any]:
    """The history line for one evaluation."""
    return {
        "label": label,
        "generated_at": ev.generated_at,
        "variant_count": ev.variant_count,
        "failure_count": len(ev.failed_metrics),
        "failed_metrics": list(ev.failed_metrics),
        "suite_sha256": ev.suite_digest,
        "spanguard_version": version,
        "metrics": {
            r.metric: {
                "score": _finite(r.score),
                "passed": r.passed,
                "direction": r.direction,
                "threshold": r.threshold,
                "verdict": r.verdict,
                "category": r.category,
                "confidence_interval": (
                    [_finite(v) for v in r.confidence_interval] if r.confidence_interval else None
                ),
                "interval_level": ev.config.level,
            }
            for r in sorted(ev.results, key=lambda r: r.metric)
        },
    }


def _check_entry(entry: object, file: str, line: int | None) -> dict[str, Any]:
    if not isinstance(entry, dict) or not isinstance(entry.get("metrics"), dict):
        raise InputError(
            "is not a history entry: it needs a 'metrics' object.",
            file=file,
            line=line,
            field="metrics",
        )
    for name, item in entry["metrics"].items():
        score = item.get("score") if isinstance(item, dict) else None
        if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
            raise InputError(
                "must be a number or null.", file=file, line=line, field=f"metrics.{name}.score"
            )
    return entry


def load_history(path: Path) -> list[dict[str, Any]]:
    """The entries of ``history.jsonl`` (or fairtrace's ``history.json``); [] when absent."""
    if not path.exists():
        return []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"the history file cannot be read ({exc}).", file=str(path)) from None
    if path.suffix == ".json":
        try:
            data = parse_json(text)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"is not valid JSON ({exc.msg}); expected fairtrace's history list.",
                file=str(path),
                line=exc.lineno,
            ) from None
        if not isinstance(data, list):
            raise InputError("must be a JSON list of history entries.", file=str(path))
        return [_check_entry(e, str(path), None) for e in data]
    entries = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            entry = parse_json(raw)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"is not valid JSON ({exc.msg}); each line of a history file is one run.",
                file=str(path),
                line=number,
            ) from None
        entries.append(_check_entry(entry, str(path), number))
    return entries


def _append(path: Path, entry: dict[str, Any]) -> None:
    line = json.dumps(entry, sort_keys=True, allow_nan=False, ensure_ascii=False) + "\n"
    append_text(path, line)  # synced; a failed append is undone (common.writes)


def same_suite(entries: Sequence[dict[str, Any]], digest: str | None) -> list[dict[str, Any]]:
    """The entries recorded for the suite with this SHA-256: a trend never mixes suites (an
    entry without a digest, e.g. fairtrace's, counts as the same suite)."""
    return [e for e in entries if e.get("suite_sha256") in (None, digest)]


def _measured(item: Any) -> float | None:
    """A history entry's score for a metric, or None when it measured nothing (absent, or
    NO_SIGNAL: its score is no measurement)."""
    if not isinstance(item, dict) or item.get("verdict") == Verdict.NO_SIGNAL:
        return None
    score = item.get("score")
    return score if isinstance(score, int | float) else None


def trend_rows(previous: Sequence[dict[str, Any]], ev: Evaluation) -> list[dict[str, Any]]:
    """Per metric: the scores and verdicts of the last runs of the same suite, this run's,
    and the change since the last (a run without signal is no score: "no signal")."""
    previous = same_suite(previous, ev.suite_digest)
    rows = []
    for r in sorted(ev.results, key=lambda r: r.metric):
        items = [e["metrics"].get(r.metric) for e in previous[-TREND_RUNS:]]
        scores = [_measured(item) for item in items]
        verdicts = [item.get("verdict") if isinstance(item, dict) else None for item in items]
        silent = r.verdict == Verdict.NO_SIGNAL
        score = None if silent else _finite(r.score)
        last = next((s for s in reversed(scores) if s is not None), None)
        delta = None if last is None or score is None else score - last
        if silent:
            change = "no signal"
        elif delta is None or delta == 0:
            change = "new" if last is None else "unchanged"
        else:
            worse = delta > 0 if r.direction == Direction.LOWER else delta < 0
            change = "worse" if worse else "better"
        rows.append(
            {
                "metric": r.metric,
                "previous_scores": scores,
                "previous_verdicts": verdicts,
                "score": score,
                "verdict": r.verdict,
                "delta": _finite(delta),
                "change": change,
                "direction": r.direction,
            }
        )
    return rows


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.4f}"


def _point(score: float | None, verdict: str | None) -> str:
    """One run of a trend: its score and, when known, its verdict (``0.1200 INCONCLUSIVE``;
    ``– NO_SIGNAL``)."""
    return _fmt(score) + (f" {label(verdict)}" if verdict else "")


def trend_points(scores: Sequence[float | None], verdicts: Sequence[str | None]) -> str:
    """Runs in order: ``0.0000 PASS → 0.1200 INCONCLUSIVE → – NO_SIGNAL``."""
    return " → ".join(_point(s, v) for s, v in zip(scores, verdicts, strict=True))


_ARROW = {
    "better": "↓ better",
    "worse": "↑ worse",
    "unchanged": "= unchanged",
    "new": "new",
    "no signal": "no signal",
}


def _markdown(rows: list[dict[str, Any]], runs: int) -> str:
    lines = [
        "",
        f"## Trend (against the previous {runs} run(s))",
        "",
        "| Metric | Previous runs | This run | Change |",
        "|---|---|---:|---|",
    ]
    for row in rows:
        history = trend_points(row["previous_scores"], row["previous_verdicts"]) or "–"
        delta = "" if row["delta"] is None else f" ({row['delta']:+.4f})"
        lines.append(
            f"| {row['metric']} | {history} | {_point(row['score'], row['verdict'])} | "
            f"{_ARROW[row['change']]}{delta} |"
        )
    return "\n".join(lines) + "\n"


def _html(rows: list[dict[str, Any]], runs: int) -> str:
    cells = "".join(
        f"<tr><td>{escape(r['metric'])}</td><td>"
        f"{escape(trend_points(r['previous_scores'], r['previous_verdicts']) or '–')}</td>"
        f"<td>{escape(_point(r['score'], r['verdict']))}</td>"
        f"<td>{escape(_ARROW[r['change']])}</td></tr>"
        for r in rows
    )
    return (
        f'<section id="trend"><h2>Trend (against the previous {runs} run(s))</h2><table>'
        "<tr><th>Metric</th><th>Previous runs</th><th>This run</th><th>Change</th></tr>"
        f"{cells}</table></section>"
    )


def trend_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The trend for the terminal: one line per metric that has earlier runs."""
    lines = []
    for row in rows:
        earlier = any(
            v is not None for v in (*row["previous_scores"], *row.get("previous_verdicts", ()))
        )
        if row["change"] == "new" or not earlier:
            continue
        history = trend_points(
            [*row["previous_scores"], row["score"]], [*row["previous_verdicts"], row["verdict"]]
        )
        delta = "" if row["delta"] is None else f" ({row['delta']:+.4f})"
        lines.append(f"trend {row['metric']:<30} {history}  {_ARROW[row['change']]}{delta}")
    return lines


def record_run(
    ev: Evaluation, directory: Path, version: str, *, label: str | None = None
) -> list[dict[str, Any]]:
    """Append this run to ``directory/history.jsonl`` (labelled ``label``, by default the
    git commit) and add the trend against earlier runs of the same suite to the reports
    already written there (report.json ``spanguard.trend``, report.md, report.html)."""
    path = directory / HISTORY_FILE
    previous = same_suite(load_history(path), ev.suite_digest)
    _append(
        path, history_entry(ev, version, label if label is not None else default_label(directory))
    )
    rows = trend_rows(previous, ev)
    runs = min(len(previous), TREND_RUNS)
    report = directory / "report.json"
    if report.exists():
        add_trend(report, {"previous_runs": len(previous), "metrics": rows})
    markdown = directory / "report.md"
    if markdown.exists():
        write_text_atomic(markdown, markdown.read_text(encoding="utf-8") + _markdown(rows, runs))
    html = directory / "report.html"
    if html.exists():
        page = html.read_text(encoding="utf-8")
        if "</body>" in page:
            page = page.replace("</body>", _html(rows, runs) + "</body>", 1)
            write_text_atomic(html, page)
    return rows


_END = b"\n  }\n}\n"  # how report.json ends: its last key, the spanguard block, closed
_BLOCK = b'\n  "spanguard": {\n'
_TAIL = 1 << 20  # bytes of the report's end searched for the spanguard block


def add_trend(report: Path, trend: dict[str, Any]) -> None:
    """Set ``spanguard.trend`` in a report.json: spliced in before the block's end, the rest
    of the file copied a chunk at a time (a report of millions of scenario records is never
    parsed whole); a report of another shape is parsed and written again, as before."""
    size = report.stat().st_size
    with report.open("rb") as f:
        f.seek(max(0, size - _TAIL))
        tail = f.read()
    at = tail.rfind(_BLOCK)
    if at < 0 or not tail.endswith(_END) or b'\n    "trend": ' in tail[at:]:
        data = parse_json(report.read_text(encoding="utf-8"))
        data.setdefault("spanguard", {})["trend"] = trend
        write_text_atomic(report, json.dumps(data, indent=2, allow_nan=False) + "\n")
        return
    lines = json.dumps({"trend": trend}, indent=2, allow_nan=False).split("\n")[1:-1]
    added = (",\n" + "\n".join("  " + line for line in lines)).encode("utf-8")

    def chunks() -> Iterator[bytes]:
        left = size - len(_END)
        with report.open("rb") as f:
            while left > 0:
                chunk = f.read(min(left, 1 << 16))
                if not chunk:
                    break
                left -= len(chunk)
                yield chunk
        yield added + _END

    write_chunks_atomic(report, chunks())


def is_history_reference(path: Path) -> bool:
    """True for ``…/history.jsonl``, ``…/history.json`` and their ``@N`` forms."""
    name = path.name.partition("@")[0]
    return name in (HISTORY_FILE, "history.json")


def report_from_history(path: Path) -> dict[str, Any]:
    """The history entry ``path`` names (``history.jsonl@N``, default the last) as a report
    that :func:`~spanguard_processor.fairness.compare.compare_reports` reads."""
    name, _, index_text = path.name.partition("@")
    file = path.with_name(name)
    try:
        index = int(index_text) if index_text else -1
    except ValueError:
        raise InputError(
            f"'@{index_text}' is not a run index; use e.g. @-2 for the run "
            "before the last, @0 for the first.",
            file=str(file),
        ) from None
    if not file.exists():
        raise InputError("the history file does not exist.", file=str(file))
    entries = load_history(file)
    if not -len(entries) <= index < len(entries):
        raise InputError(f"has {len(entries)} run(s); there is no run @{index}.", file=str(file))
    entry = entries[index]
    results = []
    for name_, item in sorted(entry["metrics"].items()):
        if item.get("score") is None and item.get("verdict") != Verdict.NO_SIGNAL:
            continue
        result = {"metric": name_, **{k: v for k, v in item.items() if k != "category"}}
        if item.get("category"):
            result["category"] = item["category"]
        results.append(result)
    return {
        "generated_at": entry.get("generated_at"),
        "variant_count": entry.get("variant_count"),
        "metric_results": results,
    }


def _entry_verdict(item: Any) -> str | None:
    """A metric's verdict in a history entry (fairtrace's entries: pass or fail from
    ``passed``)."""
    if not isinstance(item, dict):
        return None
    verdict = item.get("verdict")
    if isinstance(verdict, str) and verdict:
        return verdict
    passed = item.get("passed")
    return None if passed is None else ("pass" if passed else "fail")


def history_summary(entries: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs of a history grouped by suite (first appearance order): per suite its runs
    (index in the file, label, time, verdict, each failing metric's verdict) and each
    metric's scores and verdicts in run order (a NO_SIGNAL run has no score)."""
    suites: dict[str | None, dict[str, Any]] = {}
    for index, entry in enumerate(entries):
        digest = entry.get("suite_sha256")
        group = suites.setdefault(
            digest, {"suite_sha256": digest, "runs": [], "metrics": {}, "verdicts": {}}
        )
        failed = list(entry.get("failed_metrics") or [])
        metrics = entry["metrics"]
        group["runs"].append(
            {
                "index": index,
                "label": entry.get("label"),
                "generated_at": entry.get("generated_at"),
                "passed": not failed,
                "failed_metrics": failed,
                "failed_verdicts": {m: _entry_verdict(metrics.get(m)) for m in failed},
            }
        )
        runs = len(group["runs"])
        for name, item in sorted(metrics.items()):
            scores = group["metrics"].setdefault(name, [None] * (runs - 1))
            verdicts = group["verdicts"].setdefault(name, [None] * (runs - 1))
            scores.append(_measured(item))
            verdicts.append(_entry_verdict(item))
        for column in (*group["metrics"].values(), *group["verdicts"].values()):
            column.extend([None] * (runs - len(column)))
    return list(suites.values())


def find_histories(directory: Path) -> list[Path]:
    """The run histories in ``directory`` and below it, the folder's own first, then by path
    (``reports/main/history.jsonl``, ``reports/pr/history.jsonl``: one folder per branch, as
    docs/quickstart.md writes them); hidden folders are skipped."""
    own = directory / HISTORY_FILE
    below = sorted(
        p
        for p in directory.rglob(HISTORY_FILE)
        if p != own
        and p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(directory).parts[:-1])
    )
    return ([own] if own.is_file() else []) + below


def run_verdict(run: dict[str, Any]) -> str:
    """``PASSED``, or ``FAILED: a, b (INCONCLUSIVE)`` — a FAIL named alone, any other
    blocking verdict with its label (as the gate line of ``spanguard run`` says it)."""
    if run["passed"]:
        return "PASSED"
    verdicts = run.get("failed_verdicts") or {}
    return "FAILED: " + ", ".join(
        m if verdicts.get(m) in (None, "fail") else f"{m} ({label(verdicts[m])})"
        for m in run["failed_metrics"]
    )
