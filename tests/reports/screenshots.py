"""Regenerate the report screenshots in docs/images (1200×900 PNGs of headless Chromium):

    SOURCE_DATE_EPOCH=1800000000 .venv/bin/python -m tests.reports.screenshots

The top of the baseline's and the candidate's fairness reports, the candidate's first
counterfactual pairs, and the regression report of ``spanguard check --html``.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from .browser import Browser
from .data import fairness_reports, regression_report

IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"

_SCROLL_TO_EVIDENCE = (
    "document.querySelector('.evidence').scrollIntoView(); "
    "new Promise(r => requestAnimationFrame(() => r(true)))"
)


def _open(browser: Browser, page: Path) -> bool:
    load = browser.open(page.as_uri())
    if load.console_errors or load.exceptions:
        print(f"{page}: {load.console_errors} {load.exceptions}", file=sys.stderr)
        return False
    return True


def _shot(browser: Browser, name: str) -> None:
    shot = browser.screenshot(IMAGES / name)
    print(f"{shot} ({shot.stat().st_size // 1024} KB)")


def main() -> int:
    IMAGES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, Browser(width=1200, height=900) as browser:
        pages = fairness_reports(Path(tmp), intersectional=False)
        for name, page in pages.items():
            if not _open(browser, page):
                return 1
            _shot(browser, f"fairness-report-{name}.png")
        if not _open(browser, pages["candidate"]):
            return 1
        browser.evaluate(_SCROLL_TO_EVIDENCE)
        _shot(browser, "fairness-report-evidence.png")
        here = Path.cwd()
        os.chdir(tmp)  # the page names its inputs as given: runs/baseline.json, not /tmp/…
        try:
            page = regression_report(Path("runs")).resolve()
        finally:
            os.chdir(here)
        if not _open(browser, page):
            return 1
        _shot(browser, "regression-report.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
