"""The repository stands on its own: nothing in it reads or cites files a clone does not have.

A user's clone has nothing beside it (no shared folder, no design notes); tests read the peers'
example data from ``tests/data`` and docstrings point into ``docs/``."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKED = (
    "sdk",
    "collector_processor",
    "tests",
    "bench",
    "examples",
    "docs",
    "README.md",
    ".ci",
    "pyproject.toml",
    "otel-config.yaml",
)
OUTSIDE = re.compile(r"\.\./shared|DESIGN\.md|\bspec §")


def tracked_files() -> list[Path]:
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--", *CHECKED], cwd=ROOT, check=True, capture_output=True
        )
        .stdout.decode()
        .split("\0")
    )
    return [ROOT / name for name in listed if name and (ROOT / name).is_file()]


def test_nothing_reads_or_cites_files_outside_the_repository() -> None:
    this = Path(__file__).resolve()
    hits = []
    for path in tracked_files():
        if path == this:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not hits, "\n".join(hits)


def test_peer_data_has_its_origin_and_licence() -> None:
    readme = (ROOT / "tests" / "data" / "README.md").read_text(encoding="utf-8")
    for folder in ("trace2eval", "fairtrace"):
        assert (ROOT / "tests" / "data" / folder / "README.md").is_file()
        assert f"`{folder}/`" in readme
    assert "MIT" in readme
