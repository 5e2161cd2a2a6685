"""The benchmarks and examples import only modules that exist.

They run outside the test suite (minutes each), so a module moved by a refactor would break
them unseen: an import inside a function (a benchmark's child process) fails only when run.
This reads every import of ``spanguard``/``spanguard_processor`` in bench/ and examples/, at
any depth (but the fallbacks under ``except ImportError``), and resolves it without running
the script."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted([*(ROOT / "bench").glob("*.py"), *(ROOT / "examples").glob("*.py")])
OURS = ("spanguard", "spanguard_processor")


def _fallbacks(tree: ast.AST) -> set[int]:
    """ids of the nodes in an ``except ImportError`` handler: imports for older code (an A/B
    against another checkout), not expected to resolve here."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        for handler in node.handlers if isinstance(node, ast.Try) else ():
            if "ImportError" in ast.unparse(handler.type or ast.Name("")):
                inside.update(id(n) for stmt in handler.body for n in ast.walk(stmt))
    return inside


def _imports(path: Path) -> list[tuple[int, str, tuple[str, ...]]]:
    """(line, module, names) of every absolute import of our packages in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    skip = _fallbacks(tree)
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = tuple(alias.name for alias in node.names)
            found.append((node.lineno, node.module, names))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name, ()) for alias in node.names)
    return [f for f in found if f[1].split(".")[0] in OURS]


def _missing(module: str, names: tuple[str, ...]) -> str | None:
    if importlib.util.find_spec(module) is None:
        return f"no module {module}"
    loaded = importlib.import_module(module)
    for name in names:
        if hasattr(loaded, name):
            continue
        if not hasattr(loaded, "__path__") or importlib.util.find_spec(f"{module}.{name}") is None:
            return f"{module} has no {name}"
    return None


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_import_of_ours_resolves(script: Path) -> None:
    problems = [
        f"{script.relative_to(ROOT)}:{line}: {problem}"
        for line, module, names in _imports(script)
        if (problem := _missing(module, names)) is not None
    ]
    assert problems == []


def test_the_serve_start_benchmark_builds_its_store_on_this_code(tmp_path: Path) -> None:
    """bench_serve_start decodes its requests through the receive path's codec (a method an
    import check cannot see), so its store builder runs here on a 1 MB store."""
    from bench.bench_serve_start import build_store
    from spanguard_processor.store.span_store import SpanStore

    path = tmp_path / "spans.db"
    build_store(path, 1)
    with SpanStore(path, readonly=True) as store:
        assert store.trace_counts()[0] > 0
