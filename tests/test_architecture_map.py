"""The map stays true: docs/architecture.md's "Where to find…" table names modules that exist, and
the lookups a new maintainer makes reach the module that *defines* the behaviour in one hop.

The defining module is found from the code (the module whose top level defines the symbol, or
registers the name), never written down twice, so a move that forgets the map fails here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROCESSOR = ROOT / "collector_processor" / "src" / "spanguard_processor"
SDK = ROOT / "sdk" / "src"
PAGE = ROOT / "docs" / "architecture.md"
CODE = re.compile(r"`([^`]+)`")


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


def _module_file(name: str) -> Path | None:
    """The file of a doc path such as ``traces/identity.py`` or ``spanguard/_export.py``."""
    base = SDK if name.startswith("spanguard/") else PROCESSOR
    path = base / name
    if path.suffix == ".py":
        return path if path.is_file() else None
    package = path / "__init__.py"
    return package if package.is_file() else None


def _references(cell: str) -> list[tuple[Path | None, str, str | None]]:
    """(file or None, as written, symbol or None) for each module the cell names."""
    found = []
    for code in CODE.findall(cell):
        if "<" in code or "/" not in code:
            continue  # a pattern such as cli/<command>.py, or a symbol named after its module
        module, _, symbol = code.partition(".py")
        symbol = symbol.lstrip(".") or None
        if not code.endswith(".py") and "." in code.rsplit("/", 1)[-1] and not symbol:
            module, _, symbol = code.rpartition(".")
        path = _module_file(module + ".py") or _module_file(module)
        found.append((path, code, symbol.split(".")[0] if symbol else None))
    return found


def _defines(path: Path, symbol: str) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == symbol:
                return True
        elif isinstance(node, ast.Assign):
            if any(isinstance(t, ast.Name) and t.id == symbol for t in node.targets):
                return True
        elif (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == symbol
        ):
            return True
    return False


def test_every_row_names_modules_that_exist() -> None:
    broken = []
    rows = _table()
    assert len(rows) >= 20, "the Where to find table was not found"
    for behaviour, cell in rows:
        refs = _references(cell)
        if not refs and "cli/<command>.py" not in cell:
            broken.append(f"{behaviour!r}: names no module")
        for path, code, symbol in refs:
            if path is None:
                broken.append(f"{behaviour!r}: `{code}` is no module")
            elif symbol and not _defines(path, symbol):
                broken.append(f"{behaviour!r}: `{code}`: {path.name} defines no {symbol}")
    assert broken == [], "docs/architecture.md's map has drifted:\n  " + "\n  ".join(broken)


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
            if _defines(path, name):
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
    named = {path for path, _, _ in _references(rows[0]) if path is not None}
    assert defining <= named, (
        f"the row about {words!r} names {sorted(map(str, named))}, "
        f"but {name} is defined in {sorted(map(str, defining))}"
    )
