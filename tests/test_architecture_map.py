"""The map stays true: docs/architecture.md's "Where to find…" table names modules that exist, and
the lookups a new maintainer makes reach the module that *defines* the behaviour in one hop.

The defining module is found from the code (the module whose top level defines the symbol, or
registers the name), never written down twice, so a move that forgets the map fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from .test_architecture import _DOC_TOKEN, _module_file, _names

ROOT = Path(__file__).resolve().parents[1]
PROCESSOR = ROOT / "collector_processor" / "src" / "spanguard_processor"
SDK = ROOT / "sdk" / "src"
PAGE = ROOT / "docs" / "architecture.md"


def _table() -> list[tuple[str, str]]:
    """(behaviour, module cell) rows of the "Where to find…" table."""
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    start = lines.index("## Where to find…")
    rows = []
    for line in lines[start + 1 :]:
        if line.startswith("## "):
            break
        if line.startswith("|") and not line.startswith("|---") and "| module |" not in line:
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            rows.append((cells[0], cells[-1]))
    return rows


def _modules_named(cell: str) -> set[Path]:
    """The source files of the modules a cell names (``traces/identity.py``,
    ``cli/_common.check_files``, ``fairness/kinds/base.RecordIndex``); whether each exists, and
    defines the symbol named, is checked for the whole page by test_architecture."""
    found = set()
    for token in _DOC_TOKEN.findall(cell):
        if "/" not in token:
            continue  # a symbol named after its module
        parts = token.removesuffix(".py").split(".")
        for split in range(len(parts), 0, -1):  # the longest prefix that is a module
            source = _module_file("/".join(parts[:split]))
            if source is not None:
                found.add(source)
                break
    return found


def _defines_here(path: Path, symbol: str) -> bool:
    """``path``'s top level defines ``symbol`` itself (an import re-exports, it does not define)."""
    body = ast.parse(path.read_text(encoding="utf-8")).body
    return any(symbol in _names(node) for node in body if not isinstance(node, ast.ImportFrom))


def test_every_row_names_a_module() -> None:
    rows = _table()
    assert len(rows) >= 20, "the Where to find table was not found"
    nameless = [
        behaviour
        for behaviour, cell in rows
        if not _modules_named(cell) and "cli/<command>.py" not in cell
    ]
    assert nameless == [], f"Where to find rows that name no module: {nameless}"


def _python_files() -> list[Path]:
    return sorted([*PROCESSOR.rglob("*.py"), *(SDK / "spanguard").rglob("*.py")])


def _defining_modules(kind: str, name: str, under: str = "") -> set[Path]:
    """Modules whose top level defines ``name`` (kind "def"), that register the string ``name``
    as a keyword argument ``name=`` or the first argument of a call (kind "registers"), or that
    spell the string ``name`` at all (kind "literal")."""
    found = set()
    for path in _python_files():
        rel = path.relative_to(PROCESSOR if path.is_relative_to(PROCESSOR) else SDK).as_posix()
        if not rel.startswith(under) or rel.startswith("cli/"):
            continue
        if kind == "def":
            if _defines_here(path, name):
                found.add(path)
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if kind == "literal" and isinstance(node, ast.Constant) and node.value == name:
                found.add(path)
            if not isinstance(node, ast.Call):
                continue
            values = [kw.value for kw in node.keywords if kw.arg == "name"] + node.args[:1]
            if any(isinstance(v, ast.Constant) and v.value == name for v in values):
                found.add(path)
    return found


#: The lookups the issue that asked for this map measured: (words of the row, how to find the
#: module that defines the behaviour, kind, name, folder it lives under).
LOOKUPS = [
    ("escalation_parity", "registers", "escalation_parity", "fairness/"),
    ("a late span", "def", "TraceView", "store/"),
    ("a case's latency limit", "literal", "max_latency_ms", ""),
    ("the HTML fairness report", "def", "render_html", "fairness/"),
    ("identity read from attributes", "def", "request_identity", "traces/"),
]


@pytest.mark.parametrize(
    ("words", "kind", "name", "under"), LOOKUPS, ids=[lookup[0] for lookup in LOOKUPS]
)
def test_a_lookup_reaches_the_defining_module_in_one_hop(
    words: str, kind: str, name: str, under: str
) -> None:
    defining = _defining_modules(kind, name, under)
    assert len(defining) == 1, f"{name}: defined in {sorted(map(str, defining))}, expected one"
    rows = [cell for behaviour, cell in _table() if words in behaviour]
    assert len(rows) == 1, f"no single Where to find row about {words!r}"
    named = _modules_named(rows[0])
    assert defining <= named, (
        f"the row about {words!r} names {sorted(map(str, named))}, "
        f"but {name} is defined in {sorted(map(str, defining))}"
    )
