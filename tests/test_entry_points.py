"""One style of entry point (httpx's): every package ``__init__`` re-exports typed names in its
``__all__``, the public modules are type-checked strictly, and the processor reaches the
SDK through its public modules only."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import tomllib
from pathlib import Path

import pytest

from .test_architecture import PACKAGES, ROOT, SOURCES, import_graph


def test_the_processor_imports_no_private_sdk_module() -> None:
    graph = import_graph(SOURCES, PACKAGES)
    private = [
        f"{module} → {target} ({where})"
        for module, edges in sorted(graph.items())
        if module.startswith("spanguard_processor")
        for target, where in sorted(edges.items())
        if target.startswith("spanguard.") and any(p.startswith("_") for p in target.split("."))
    ]
    assert private == [], "\n".join(private)


def _package_inits() -> list[tuple[str, Path]]:
    found = []
    for root, package in zip(SOURCES, PACKAGES, strict=True):
        for path in sorted((root / package).rglob("__init__.py")):
            name = ".".join(path.relative_to(root).parent.parts)
            found.append((name, path))
    return found


def _exports(tree: ast.Module) -> tuple[list[str], set[str], set[str], bool]:
    """``__all__``, the names bound at the top level, those imported under ``TYPE_CHECKING``,
    and whether the module has a ``__getattr__`` (loads its exports lazily)."""
    listed: list[str] = []
    bound: set[str] = set()
    typed: set[str] = set()
    lazy = False
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for sub in node.body:
                if isinstance(sub, ast.ImportFrom) and sub.module:  # not a submodule itself
                    typed.update(a.asname or a.name for a in sub.names)
                elif isinstance(sub, ast.ImportFrom):
                    bound.update(a.asname or a.name for a in sub.names)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            bound.add(node.name)
            lazy = lazy or node.name == "__getattr__"
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for leaf in ast.walk(target):
                    if isinstance(leaf, ast.Name):
                        bound.add(leaf.id)
                        lazy = lazy or leaf.id == "__getattr__"
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                assert node.value is not None
                listed = list(ast.literal_eval(node.value))
    return listed, bound, typed, lazy


def test_every_package_lists_its_typed_exports_in_all() -> None:
    """httpx's style: every package ``__init__`` has an ``__all__`` of names it imports
    (under ``TYPE_CHECKING`` when it loads them lazily, so mypy types them) or defines."""
    problems = []
    for name, path in _package_inits():
        listed, bound, typed, lazy = _exports(ast.parse(path.read_text("utf-8")))
        if not listed:
            problems.append(f"{name}: no __all__")
        # a lazy name that is also a submodule's is the function or the module by import order
        shadowing = [n for n in typed & set(listed) if (path.parent / f"{n}.py").exists()]
        if shadowing:
            problems.append(f"{name}: {shadowing} are also the names of its modules")
        untyped = [n for n in listed if n not in bound and not (lazy and n in typed)]
        if untyped:
            problems.append(f"{name}: {untyped} neither imported nor defined (typed)")
    assert problems == [], "\n".join(problems)


@pytest.mark.slow  # imports every package of both (~6 s alone)
def test_every_export_resolves_to_what_mypy_sees() -> None:
    """Each name of each ``__all__`` loads, and a lazily loaded one is the object its
    ``TYPE_CHECKING`` import names."""
    for name, path in _package_inits():
        module = importlib.import_module(name)
        tree = ast.parse(path.read_text("utf-8"))
        homes: dict[str, str] = {}
        for node in tree.body:
            if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
                for sub in node.body:
                    if isinstance(sub, ast.ImportFrom):
                        home = importlib.util.resolve_name(
                            "." * sub.level + (sub.module or ""), name
                        )
                        homes.update({a.asname or a.name: home for a in sub.names})
        for export in module.__all__:
            value = getattr(module, export)
            if export in homes:
                assert value is getattr(importlib.import_module(homes[export]), export), export


def test_the_public_modules_are_type_checked_strictly() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    strict = [
        o["module"]
        for o in config["tool"]["mypy"]["overrides"]
        if o.get("disallow_any_generics") and o.get("warn_return_any")
    ]
    assert len(strict) == 1
    public = {"spanguard", "spanguard_processor", "spanguard_processor.regression"}
    assert public <= set(strict[0])
    for module in strict[0]:
        importlib.import_module(module)


#: packages whose __init__ still holds code of its own (docs/architecture.md, "Entry points")
_CODE_IN_INIT = {"spanguard_processor.cli", "spanguard_processor.fairness.kinds"}


def test_a_package_init_holds_re_exports_only() -> None:
    holding = []
    for name, path in _package_inits():
        tree = ast.parse(path.read_text("utf-8"))
        defined = [
            node.name
            for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.ClassDef)
            and node.name not in ("__getattr__", "__dir__")
        ]
        if defined and name not in _CODE_IN_INIT:
            holding.append(f"{name}: {defined}")
    assert holding == [], "\n".join(holding)
