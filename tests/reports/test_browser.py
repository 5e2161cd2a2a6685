"""The HTML reports in real headless Chromium: they load, log no console errors or exceptions,
request nothing but themselves, lay out without overflow, and show one chart per metric."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spanguard_processor.fairness.report.verdict_text import label

from .browser import INSTALL_HINT, Browser, find_chromium
from .data import INTERSECTIONAL_METRICS, METRICS, fairness_reports, regression_report

pytestmark = pytest.mark.integration

_PAGE_FACTS = """(() => {
  const svgs = [...document.querySelectorAll('section svg')];
  return {
    title: document.title,
    h1: document.querySelector('h1').innerText,
    text: document.body.innerText,
    sections: [...document.querySelectorAll('section[id]')].map(s => s.id),
    charts: svgs.map(s => {
      const box = s.getBoundingClientRect();
      return {section: s.closest('section').id, width: box.width, height: box.height,
              points: s.querySelectorAll('circle').length,
              labels: [...s.querySelectorAll('text')].map(t => t.textContent),
              clipped: [...s.querySelectorAll('text')].filter(t => {
                const b = t.getBBox(), v = s.viewBox.baseVal;
                return b.x < 0 || b.y < 0 || b.x + b.width > v.width || b.y + b.height > v.height;
              }).map(t => t.textContent)};
    }),
    overflow: document.documentElement.scrollWidth > window.innerWidth,
    rows: document.querySelectorAll('table')[0].querySelectorAll('tr').length,
    pairs: [...document.querySelectorAll('table.pair')].map(t => ({
      section: t.closest('section').id,
      cells: [...t.querySelectorAll('tr')].map(r => [...r.children].map(c => c.innerText)),
      marks: [...t.querySelectorAll('mark')].map(m => m.innerText),
      diffRows: [...t.querySelectorAll('tr.diff th')].map(c => c.innerText)})),
    clippedCells: [...document.querySelectorAll('td, th')].filter(
      c => c.scrollWidth > c.clientWidth + 1 || c.scrollHeight > c.clientHeight + 1
    ).map(c => c.innerText),
  };
})()"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if find_chromium() is None:
        # CI installs Chromium in .ci/run, so there a missing browser is a failure, not a skip.
        if os.environ.get("CI"):
            pytest.fail(INSTALL_HINT)
        pytest.skip(INSTALL_HINT)
    with Browser() as b:
        yield b


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return fairness_reports(tmp_path_factory.mktemp("reports"))


def _check(
    browser: Browser, page: Path, title: str = "spanguard fairness report"
) -> dict[str, Any]:
    load = browser.open(page.as_uri())
    assert load.console_errors == [], f"{page}: console errors {load.console_errors}"
    assert load.exceptions == [], f"{page}: exceptions {load.exceptions}"
    assert load.requests == [page.as_uri()], f"{page} requested more than itself: {load.requests}"
    facts: dict[str, Any] = browser.evaluate(_PAGE_FACTS)
    assert facts["title"] == title
    assert not facts["overflow"], f"{page} is wider than a 1200 px window"
    assert facts["clippedCells"] == [], f"{page}: text cut off in table cells"
    return facts


@pytest.mark.slow
@pytest.mark.parametrize("name", ["baseline", "candidate", "intersectional"])
def test_fairness_report_renders_one_chart_per_metric(
    browser: Browser, reports: dict[str, Path], name: str
) -> None:
    page = reports[name]
    facts = _check(browser, page)
    report = json.loads((page.parent / "report.json").read_text(encoding="utf-8"))
    results = {m["metric"]: m for m in report["metric_results"]}
    metrics = INTERSECTIONAL_METRICS if name == "intersectional" else METRICS
    assert set(results) == set(metrics)
    verdict = "FAILED" if name == "candidate" else "PASSED"
    assert facts["h1"] == f"spanguard fairness report: {verdict}"
    assert facts["rows"] == 1 + len(metrics)
    charts = facts["charts"]
    assert sorted(c["section"] for c in charts) == sorted(metrics)
    for chart in charts:
        result = results[chart["section"]]
        assert chart["width"] > 300 and chart["height"] > 30, chart
        assert chart["clipped"] == [], f"{page}: text cut off in {chart['section']}'s chart"
        # the score's point plus one per group the report lists
        assert chart["points"] == 1 + len(result["groups"]), chart
        for group in result["groups"]:
            assert any(label.startswith(group["group"]) for label in chart["labels"]), chart
        assert any(label.startswith("threshold ") for label in chart["labels"]), chart
    for metric, result in results.items():
        assert metric in facts["text"]
        assert label(result["verdict"]) in facts["text"]  # PASS, FAIL, INCONCLUSIVE, …
    if name == "candidate":  # its bias is beyond the threshold in refusals and tool use
        failed = {m for m, r in results.items() if r["verdict"] == "fail"}
        assert {"refusal_gap", "tool_use_parity"} <= failed
        assert facts["text"].count("FAIL") >= len(failed)
    if name == "intersectional":  # 18 groups with labels like "age=20, gender=man, race=Asian"
        assert all(len(results[m]["groups"]) == 18 for m in metrics)
    # every metric's counterfactual pairs are on the page, as its report.json lists them
    shown = [p["section"] for p in facts["pairs"]]
    assert shown == [m for m, r in results.items() for _ in r["evidence"]]
    if name == "candidate":
        pair = facts["pairs"][0]
        evidence = results[pair["section"]]["evidence"][0]
        high, low = evidence["variants"]
        assert pair["cells"][0][1:] == [high["group"], low["group"]]
        assert pair["marks"] and all(m in ("man", "woman", "non-binary") for m in pair["marks"])
        assert "escalated" in pair["diffRows"]


_REGRESSION_FACTS = """(() => ({
  charts: [...document.querySelectorAll('section svg')].map(s => ({
    section: s.closest('section').id,
    clipped: [...s.querySelectorAll('text')].filter(t => {
      const b = t.getBBox(), v = s.viewBox.baseVal;
      return b.x < 0 || b.y < 0 || b.x + b.width > v.width || b.y + b.height > v.height;
    }).map(t => t.textContent)})),
  failing: [...document.querySelectorAll('table.diff tr.failing')].map(r => r.innerText),
}))()"""


def test_regression_report_renders_charts_and_case_diffs(browser: Browser, tmp_path: Path) -> None:
    page = regression_report(tmp_path)
    facts = _check(browser, page, "spanguard regression report")
    assert facts["h1"] == "spanguard regression report: FAILED"
    more = browser.evaluate(_REGRESSION_FACTS)
    assert [c["section"] for c in more["charts"]] == [
        "pass_rate",
        "trace_compliance_rate",
        "p95_latency_ms",
        "avg_cost_usd",
    ]
    assert all(c["clipped"] == [] for c in more["charts"]), more["charts"]
    assert any("tool calls" in row and "missing lookup_order" in row for row in more["failing"])


def test_browser_check_catches_console_errors_and_external_requests(
    browser: Browser, tmp_path: Path
) -> None:
    page = tmp_path / "broken.html"
    page.write_text(
        "<!DOCTYPE html><title>x</title><img src='http://127.0.0.1:9/a.png'>"
        "<script>console.error('boom'); throw new Error('bad');</script>",
        encoding="utf-8",
    )
    load = browser.open(page.as_uri())
    assert "boom" in load.console_errors
    assert any("Error: bad" in e for e in load.exceptions)
    assert "http://127.0.0.1:9/a.png" in load.requests
