"""Regenerate the report screenshots in docs/images (1200×900 PNGs of headless Chromium):

    SOURCE_DATE_EPOCH=1800000000 .venv/bin/python -m tests.reports.screenshots
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from .browser import Browser
from .data import fairness_reports

IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"


def main() -> int:
    IMAGES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, Browser(width=1200, height=900) as browser:
        for name, page in fairness_reports(Path(tmp), intersectional=False).items():
            load = browser.open(page.as_uri())
            if load.console_errors or load.exceptions:
                print(f"{page}: {load.console_errors} {load.exceptions}", file=sys.stderr)
                return 1
            shot = browser.screenshot(IMAGES / f"fairness-report-{name}.png")
            print(f"{shot} ({shot.stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
