"""The docs stay true: every relative link resolves, and the CLI reference matches --help."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spanguard_processor.cli._reference import render_reference

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(
    [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "examples").glob("*.md")]
)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    in_code = False
    anchors = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            anchors.add(_slug(line.lstrip("#")))
    return anchors


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"^[a-z]+:", target):
            continue  # external links are not fetched (no network here)
        path_part, _, anchor = target.partition("#")
        dest = (page.parent / path_part).resolve() if path_part else page
        if not dest.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{target} (no such heading)")
    assert broken == [], f"{page.relative_to(ROOT)} has broken links: {broken}"


def test_cli_reference_matches_help() -> None:
    page = ROOT / "docs" / "cli.md"
    assert page.read_text(encoding="utf-8") == render_reference(), (
        "docs/cli.md is stale; regenerate it with "
        "`python -m spanguard_processor.cli._reference > docs/cli.md`"
    )


#: a test file or folder named in the docs: ``tests/store/test_store.py``, ``tests/fairness/``
TEST_PATH = re.compile(
    r"(?<![\w/])tests/(?:[\w-]+/)*(?:[\w-]+\.(?:py|yaml|jsonl|json|sql)|[\w-]+/)"
)


def test_the_test_files_the_docs_name_exist() -> None:
    """A test moved to the folder of its package (tests mirror the code) takes its mentions
    along: every tests/ path the README or a docs page names is there (Python examples aside:
    their paths are the user's)."""
    missing = []
    for page in PAGES:
        in_python = False
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if line.startswith("```"):
                in_python = line.startswith("```python")
            for path in TEST_PATH.findall(line):
                if not in_python and not (ROOT / path).exists():
                    missing.append(f"{page.relative_to(ROOT)}:{number}: {path}")
    assert missing == [], f"test paths the docs name that do not exist: {missing}"
