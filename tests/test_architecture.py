"""The layout's rules, checked over the source: no import cycles, receivers that load only
their own transport.

The import graph is read with :mod:`ast`, not by importing, so it holds every import the code
can make: module-level ones, lazy ones inside functions, and those under ``TYPE_CHECKING``. A
``TYPE_CHECKING`` cycle never fails at run time, but it is still two modules that each need
the other to be understood, which is what layering forbids — so it counts.

An edge goes to the most specific module an import names (``from .pkg import mod`` → ``pkg.mod``,
``from .pkg import name`` → ``pkg``). Python also runs a package's ``__init__`` before any of its
submodules; those implicit edges are left out, since every package whose ``__init__``
re-exports its submodules would otherwise be a "cycle" Python resolves by design.
"""

from __future__ import annotations

import ast
import functools
import itertools
import json
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = (ROOT / "sdk" / "src", ROOT / "collector_processor" / "src")
PACKAGES = ("spanguard", "spanguard_processor")

# module → {imported module: where (path:line)}
Graph = dict[str, dict[str, str]]


@functools.cache
def parsed(path: Path) -> ast.Module:
    """A source file's tree, parsed once per run: every rule here reads the same files."""
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


@functools.cache
def walked(tree: ast.AST) -> tuple[ast.AST, ...]:
    """Every node of a tree, in ``ast.walk`` order, walked once per run (trees are keyed by
    identity, and :func:`parsed` keeps each file's)."""
    return tuple(ast.walk(tree))


def nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of a source file's tree."""
    return walked(parsed(path))


def _modules(roots: Iterable[Path], packages: Iterable[str]) -> dict[str, tuple[Path, Path, bool]]:
    found: dict[str, tuple[Path, Path, bool]] = {}
    for root in roots:
        for package in packages:
            for path in sorted((root / package).rglob("*.py")):
                parts = list(path.relative_to(root).with_suffix("").parts)
                is_package = parts[-1] == "__init__"
                name = ".".join(parts[:-1] if is_package else parts)
                found[name] = (root, path, is_package)
    return found


def import_graph(roots: Iterable[Path], packages: Iterable[str]) -> Graph:
    """Every import between the modules under ``roots``, wherever in a module it is written."""
    modules = _modules(roots, packages)
    graph: Graph = {}
    for name, (root, path, is_package) in modules.items():
        edges: dict[str, str] = {}
        here = name if is_package else name.rpartition(".")[0]
        for node in nodes(path):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here.split(".")[: len(here.split(".")) - node.level + 1]
                    source = ".".join([*base, node.module] if node.module else base)
                else:
                    source = node.module or ""
                targets = [
                    f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source
                    for alias in node.names
                ]
            for target in targets:
                if target in modules and target != name:
                    edges.setdefault(target, f"{path.relative_to(root)}:{node.lineno}")
        graph[name] = edges
    return graph


def import_cycles(graph: Graph) -> list[list[str]]:
    """One shortest cycle per strongly connected group of modules, each as a closed path."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph.get(node, {})):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_shortest_cycle(graph, group) for group in groups]


def _shortest_cycle(graph: Graph, group: set[str]) -> list[str]:
    start = min(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for succ in sorted(graph[node]):
                if succ == start:
                    return [*paths[node], start]
                if succ in group and succ not in paths:
                    paths[succ] = [*paths[node], succ]
                    following.append(succ)
        frontier = following
    raise AssertionError(f"no cycle through {start}")  # unreachable for a real group


def _describe(graph: Graph, cycle: list[str]) -> str:
    steps = [f"{a} → {b} ({graph[a][b]})" for a, b in itertools.pairwise(cycle)]
    return "\n    ".join(steps)


def test_no_import_cycles_between_modules() -> None:
    graph = import_graph(SOURCES, PACKAGES)
    assert len(graph) > 100, "the walk found too few modules; has the layout moved?"
    cycles = import_cycles(graph)
    assert not cycles, "import cycles (break each by moving what both sides need lower):\n  " + (
        "\n  ".join(_describe(graph, c) for c in cycles)
    )


# The data path as layers, lowest first (docs/architecture.md#layers). A module may import its
# own group and any group of a lower layer, never a higher one nor a sibling group of its own
# layer. Entries are module-name prefixes under spanguard_processor ("spanguard" is the SDK);
# a new top-level module that matches none is not checked until it is placed here.
LAYERS: tuple[dict[str, tuple[str, ...]], ...] = (
    {"sdk": ("spanguard",)},
    {"common": ("common",)},
    {"ingest": ("ingest",)},
    {"store": ("store",)},
    {"traces": ("traces", "spanguard_processor")},
    {"collector": ("collector",)},
    {"inputs": ("inputs",)},
    {"harness": ("harness",)},
    {"fairness": ("fairness",), "regression": ("regression",)},
    {
        "adapters": ("adapters",),
        "importers": ("importers",),
        "emit": ("emit",),
        "mining": ("mining",),
    },
    {"evaluation": ("evaluation",)},
    {"commands": ("cli", "demo", "_entry", "__main__")},
)


def _group(module: str) -> tuple[int, str] | None:
    """(layer, group) of a module, or None when it is in no layer yet."""
    if module == "spanguard" or module.startswith("spanguard."):
        return 0, "sdk"
    local = module.removeprefix("spanguard_processor.")
    for layer, groups in enumerate(LAYERS):
        for group, prefixes in groups.items():
            for prefix in prefixes:
                if local == prefix or local.startswith(prefix + "."):
                    return layer, group
    return None


def test_imports_go_down_the_data_path_only() -> None:
    graph = import_graph(SOURCES, PACKAGES)
    upward = []
    for module, edges in sorted(graph.items()):
        here = _group(module)
        for target, where in sorted(edges.items()):
            there = _group(target)
            if here is None or there is None or here[1] == there[1]:
                continue
            if there[0] >= here[0]:
                upward.append(f"{module} ({here[1]}) → {target} ({there[1]}) at {where}")
    assert upward == [], "imports against the data path:\n  " + "\n  ".join(upward)


def test_every_module_sits_in_one_stage_folder() -> None:
    """The tree is the plan: each processor module lives in the folder of its stage."""
    homeless = sorted(
        name
        for name in _modules(SOURCES, PACKAGES)
        if name != "spanguard_processor" and _group(name) is None
    )
    assert homeless == [], f"modules in no layer (place them in LAYERS): {homeless}"
    top = sorted(path.stem for path in (SOURCES[1] / "spanguard_processor").glob("*.py"))
    assert top == ["__init__", "__main__", "_entry"], f"flat modules at the top: {top}"


# Inside fairness/, the stages, lowest first (docs/architecture.md, "Fairness: the stages'
# order"). A module of a stage imports its own stage and earlier ones, never a later one: the
# shared types first, then the statistics (importable with nothing of fairness above them),
# the metrics, the suite, the app run, the gate's config and typed results, the kinds'
# strategies that fill those results, and the reports. Every other fairness module (evaluate,
# evaluate_table, stream, pipeline, plan, table_sql, testing, the package) runs the stages
# and sits above them all.
FAIRNESS_STAGES: tuple[tuple[str, ...], ...] = (
    ("vocabulary", "records"),
    ("stats",),
    ("metrics",),
    ("design",),
    ("run",),
    ("gate",),
    ("kinds",),
    ("report",),
)


def stage_of(module: str, package: str, stages: tuple[tuple[str, ...], ...]) -> int | None:
    """The index of ``module``'s stage in ``stages`` (module-name prefixes under ``package``),
    ``len(stages)`` for a module of ``package`` in none (it runs the stages), None outside it."""
    if module != package and not module.startswith(package + "."):
        return None
    local = module.removeprefix(package).removeprefix(".")
    for index, prefixes in enumerate(stages):
        if any(local == prefix or local.startswith(prefix + ".") for prefix in prefixes):
            return index
    return len(stages)


def backward_imports(graph: Graph, package: str, stages: tuple[tuple[str, ...], ...]) -> list[str]:
    """Every import in ``package`` from a module of one stage into a later stage."""
    found = []
    for module, edges in sorted(graph.items()):
        here = stage_of(module, package, stages)
        if here is None:
            continue
        for target, where in sorted(edges.items()):
            there = stage_of(target, package, stages)
            if there is not None and there > here:
                found.append(f"{module} → {target} at {where}")
    return found


def test_fairness_stages_import_no_later_stage() -> None:
    graph = import_graph(SOURCES, PACKAGES)
    package = "spanguard_processor.fairness"
    placed = {stage_of(m, package, FAIRNESS_STAGES) for m in graph}
    assert placed >= set(range(len(FAIRNESS_STAGES) + 1)), "a stage folder has no module"
    backward = backward_imports(graph, package, FAIRNESS_STAGES)
    assert backward == [], "fairness imports into a later stage:\n  " + "\n  ".join(backward)


#: regression/'s stages, lowest first: the shared case model, then mine → run → gate → report
#: (docs/architecture.md, "Fairness: the stages' order", which also holds regression's).
REGRESSION_STAGES: tuple[tuple[str, ...], ...] = (
    ("vocabulary", "textnorm", "case", "casematch", "outcome", "checks", "text_checks"),
    ("mine",),
    ("run",),
    ("gate",),
    ("report",),
)


def test_regression_stages_import_no_later_stage() -> None:
    graph = import_graph(SOURCES, PACKAGES)
    package = "spanguard_processor.regression"
    placed = {stage_of(m, package, REGRESSION_STAGES) for m in graph}
    assert placed >= set(range(len(REGRESSION_STAGES))), "a stage folder has no module"
    backward = backward_imports(graph, package, REGRESSION_STAGES)
    assert backward == [], "regression imports into a later stage:\n  " + "\n  ".join(backward)


def test_the_stage_check_finds_an_import_into_a_later_stage(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "from .run import go\n",
            "pkg/run.py": "from .gate.decide import decide\nfrom .stats import mean\n",
            "pkg/types.py": "",
            "pkg/stats/__init__.py": "from ..types import *\n",
            "pkg/gate/__init__.py": "",
            "pkg/gate/decide.py": "from ..stats import mean\n",
            "pkg/gate/config.py": "def f():\n    from ..run import go\n",
            "pkg/stats/groups.py": "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from ..gate.decide import decide\n",
        },
    )
    graph = import_graph([tmp_path], ["pkg"])
    stages = (("types",), ("stats",), ("gate",))
    assert [line.split(" at ")[0] for line in backward_imports(graph, "pkg", stages)] == [
        "pkg.gate.config → pkg.run",
        "pkg.stats.groups → pkg.gate.decide",
    ]


def _speaks_to_the_terminal(node: ast.AST) -> str | None:
    """What a library statement does that only a command may: print, exit, or use click."""
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name) and func.id in {"print", "exit", "quit"}:
            return f"{func.id}()"
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "exit"
            and isinstance(func.value, ast.Name)
            and func.value.id in {"sys", "os"}
        ):
            return f"{func.value.id}.exit()"
    if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "click" for a in node.names):
        return "import click"
    if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "click":
        return "from click import"
    if (
        isinstance(node, ast.Raise)
        and isinstance(node.exc, ast.Call | ast.Name)
        and (
            getattr(node.exc, "id", None) == "SystemExit"
            or getattr(getattr(node.exc, "func", None), "id", None) == "SystemExit"
        )
    ):
        return "raise SystemExit"
    return None


def test_only_the_commands_print_or_exit() -> None:
    """The library returns results and raises errors; the commands layer renders and exits."""
    offenders = []
    for root in SOURCES:
        for path in sorted(root.rglob("*.py")):
            module = ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(
                ".__init__"
            )
            place = _group(module)
            if place is not None and place[1] == "commands":
                continue
            for node in nodes(path):
                what = _speaks_to_the_terminal(node)
                if what is not None:
                    offenders.append(
                        f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)} {what}"
                    )
    assert offenders == []


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_the_walk_finds_lazy_and_type_checking_cycles(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "from .a import run\n",
            "pkg/a.py": "def run():\n    from .sub import b\n    return b\n",
            "pkg/sub/__init__.py": "",
            "pkg/sub/b.py": "from ..a import run\n",
            "pkg/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import "
            "d\n",
            "pkg/d.py": "import pkg.c\n",
            "pkg/e.py": "from . import a\n",
        },
    )
    graph = import_graph([tmp_path], ["pkg"])
    assert graph["pkg.a"] == {"pkg.sub.b": "pkg/a.py:2"}
    assert graph["pkg.e"] == {"pkg.a": "pkg/e.py:1"}
    assert sorted(import_cycles(graph)) == [
        ["pkg.a", "pkg.sub.b", "pkg.a"],
        ["pkg.c", "pkg.d", "pkg.c"],
    ]


def command_modules(cli_init: Path) -> set[str]:
    """The modules ``cli/__init__.COMMANDS`` names (its "module:attribute" values, read with
    :mod:`ast`): the commands. Every other module under ``cli/`` (``cli/_*.py``) is a helper."""
    found: set[str] = set()
    for node in nodes(cli_init):
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        if isinstance(target, ast.Name) and target.id == "COMMANDS":
            assert isinstance(node, ast.Assign | ast.AnnAssign)
            assert isinstance(node.value, ast.Dict), "COMMANDS is no dict literal"
            for value in node.value.values:
                assert isinstance(value, ast.Constant) and isinstance(value.value, str)
                found.add(value.value.partition(":")[0])
    return found


def commands_importing_commands(graph: Graph, commands: set[str]) -> list[str]:
    """Each import of one command module by another (what two commands share belongs in the
    library or in a ``cli/_*`` helper)."""
    return [
        f"{module} → {target} ({where})"
        for module in sorted(commands)
        for target, where in sorted(graph.get(module, {}).items())
        if target in commands
    ]


def test_no_command_imports_another_command() -> None:
    """``run`` took 7 names from ``fairness`` (issue 51): a command is a thin client of the
    library and of the ``cli/_*`` helpers, never of another command."""
    commands = command_modules(SOURCES[1] / "spanguard_processor" / "cli" / "__init__.py")
    assert {"spanguard_processor.cli.run", "spanguard_processor.cli.fairness"} <= commands
    found = commands_importing_commands(import_graph(SOURCES, PACKAGES), commands)
    assert found == [], "commands importing another command:\n  " + "\n  ".join(found)


def test_the_command_scan_finds_a_lazy_import_of_another_command(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/cli/__init__.py": 'COMMANDS: dict[str, str] = {"a": "pkg.cli.a:a", '
            '"b": "pkg.cli.b:b"}\n',
            "pkg/cli/a.py": "from ._shared import x\n\n\ndef a():\n    from .b import y\n",
            "pkg/cli/b.py": "from ._shared import x\ny = x\n",
            "pkg/cli/_shared.py": "x = 1\n",
        },
    )
    commands = command_modules(tmp_path / "pkg" / "cli" / "__init__.py")
    assert commands == {"pkg.cli.a", "pkg.cli.b"}
    found = commands_importing_commands(import_graph([tmp_path], ["pkg"]), commands)
    assert found == ["pkg.cli.a → pkg.cli.b (pkg/cli/a.py:5)"]


def test_the_grpc_receiver_loads_without_the_http_stack() -> None:
    code = (
        "import sys, json, spanguard_processor.collector.grpc_server;"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules}"
        " & {'starlette', 'uvicorn', 'h11', 'httptools', 'uvloop'})))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


_DOC_TOKEN = re.compile(r"`([A-Za-z_][\w/]*(?:\.[A-Za-z_]\w*)*)`")


def _module_file(path: str) -> Path | None:
    """``fairness/gate`` or ``spanguard/_signals`` → the source file, or None."""
    base = SOURCES[0] if path.split("/")[0] == "spanguard" else SOURCES[1] / "spanguard_processor"
    for candidate in (base / f"{path}.py", base / path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _names(node: ast.stmt) -> set[str]:
    """The top-level names a statement defines (imports count: they re-export)."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.ImportFrom):
        return {alias.asname or alias.name for alias in node.names}
    if isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {t.id for t in targets if isinstance(t, ast.Name)}
    if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
        # a package that loads its names on first use (``__getattr__``, the SDK's
        # ``spanguard``) imports them here for the type checker
        return set().union(*(_names(inner) for inner in node.body))
    return set()


def _defines(source: Path, dotted: list[str]) -> bool:
    scope: list[ast.stmt] = parsed(source).body
    for name in dotted:
        found = next((node for node in scope if name in _names(node)), None)
        if found is None:
            return False
        scope = found.body if isinstance(found, ast.ClassDef) else []
    return True


def test_the_architecture_page_names_only_modules_and_functions_that_exist() -> None:
    """Every ``module.py`` and ``module.attribute`` the page names in code spans is real."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    stale = []
    for token in sorted(set(_DOC_TOKEN.findall(text))):
        if token.endswith(".py"):
            if _module_file(token.removesuffix(".py")) is None and not (ROOT / token).is_file():
                stale.append(token)
            continue
        parts = token.split(".")
        for split in range(len(parts) - 1, 0, -1):  # the longest prefix that is a module
            source = _module_file("/".join(parts[:split]))
            if source is not None:
                if not _defines(source, parts[split:]):
                    stale.append(token)
                break
    assert stale == [], f"docs/architecture.md names what does not exist: {stale}"


#: The commands and the receivers stay short enough to read in one screen: a longer function
#: there is rendering or policy that belongs in a helper or in the library.
MAX_FUNCTION_LINES = 60
SHORT_FUNCTIONS = (
    SOURCES[1] / "spanguard_processor" / "cli",
    *(
        SOURCES[1] / "spanguard_processor" / "collector" / f"{name}.py"
        for name in ("receive", "grpc_server", "http_server")
    ),
)


def _body_start(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The line of a function's first statement after its docstring: the signature and the
    docstring are not its work (and a formatter lays a long signature out one line per
    parameter)."""
    body = node.body
    if (
        len(body) > 1
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        body = body[1:]
    return body[0].lineno


def _long_functions(paths: Iterable[Path], limit: int) -> list[tuple[Path, int, str, int]]:
    """(file, line, name, length) of every function whose body is longer than ``limit`` lines,
    counted from its first statement after the docstring to its last line."""
    found = []
    for path in paths:
        for node in nodes(path):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - _body_start(node) + 1
                if length > limit:
                    found.append((path, node.lineno, node.name, length))
    return found


def test_no_long_functions_in_the_commands_or_the_receivers() -> None:
    files = [
        p
        for place in SHORT_FUNCTIONS
        for p in (sorted(place.rglob("*.py")) if place.is_dir() else [place])
    ]
    assert len(files) > 10
    long = [
        f"{path.relative_to(ROOT)}:{line} {name} ({length} lines)"
        for path, line, name, length in _long_functions(files, MAX_FUNCTION_LINES)
    ]
    assert long == []


def test_the_length_scan_counts_the_body_after_signature_and_docstring(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        '@decorator\ndef f(\n    a,\n    b,\n):\n    """Doc.\n\n    More."""\n'
        + "    x = 1\n" * 60
        + "\n\ndef g():\n"
        + "    x = 1\n" * 59
        + "    async def h():\n        pass\n",
        encoding="utf-8",
    )
    assert [(line, name, length) for _, line, name, length in _long_functions([source], 60)] == [
        (71, "g", 61)
    ]


_OPTION = re.compile(r"(?<![\w-])--[a-z]")


def _option_literals(tree: ast.AST) -> list[tuple[int, str]]:
    """Option names (``"--max-cases"``, ``f"--adapter-option {key}"``, "pass --force") a module
    hands to an error: in a string among the arguments of a call to ``…Error`` or to
    ``resolve`` (whose label starts every message), or given as a ``field=``. Inside a sentence
    the library writes the parameter in backticks ("pass `force`"), which cli/ spells."""
    found = []
    for node in walked(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        values: list[ast.expr] = []
        if name.endswith("Error") or name == "resolve":
            values = [*node.args, *(k.value for k in node.keywords)]
        else:
            values = [k.value for k in node.keywords if k.arg == "field"]
        for value in values:
            for part in ast.walk(value):
                if (
                    isinstance(part, ast.Constant)
                    and isinstance(part.value, str)
                    and _OPTION.search(part.value)
                ):
                    found.append((node.lineno, part.value))
    return found


def _library_trees() -> Iterator[tuple[Path, ast.Module]]:
    """Every module outside the commands layer, parsed, with its path under its source root."""
    for root in SOURCES:
        for path in sorted(root.rglob("*.py")):
            module = ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(
                ".__init__"
            )
            place = _group(module)
            if place is None or place[1] != "commands":
                yield path.relative_to(root), parsed(path)


def test_the_library_names_parameters_and_the_commands_spell_options() -> None:
    """``ConfigError("max_cases", …)``, not ``"--max-cases"``: the library does not know the
    command line; cli/ spells a parameter as the option the user typed."""
    offenders = [
        f"{name}:{line} {text!r}"
        for name, tree in _library_trees()
        for line, text in _option_literals(tree)
    ]
    assert offenders == []


def test_the_option_scan_finds_fields_labels_and_error_arguments() -> None:
    tree = ast.parse(
        'raise ConfigError("--max-cases", "x")\n'
        'raise InputError("bad", field="--metric")\n'
        'resolve(text, f"--adapter-option {key}", error=e)\n'
        'raise ConfigError("max_cases", "pass a number")\n'
        'subprocess.run(["git", "rev-parse", "--short=12"])\n'
        'raise InputError("exists; " + f"pass --force to replace {path}.")\n'
        'raise InputError("exists; pass `force` to replace it -- or not.")\n'
    )
    assert _option_literals(tree) == [
        (1, "--max-cases"),
        (2, "--metric"),
        (3, "--adapter-option "),
        (6, "pass --force to replace "),
    ]


def _cli_options() -> set[str]:
    """Every long option of every ``spanguard`` command (``--max-cases``, ``--gate`` …)."""
    import click

    from spanguard_processor.cli import cli

    found: set[str] = set()
    stack: list[click.Command] = [cli]
    while stack:
        command = stack.pop()
        found.update(o for param in command.params for o in param.opts if o.startswith("--"))
        if isinstance(command, click.Group):
            ctx = click.Context(command)
            stack += [
                c
                for name in command.list_commands(ctx)
                if (c := command.get_command(ctx, name)) is not None
            ]
    return found


_OPTION_NAME = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*")


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring constants of the module, its classes and its functions."""
    found = set()
    for node in walked(tree):
        if (
            isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        ):
            found.add(id(node.body[0].value))
    return found


def _strings_naming_options(tree: ast.AST, options: set[str]) -> list[tuple[int, str]]:
    """(line, text) of every string literal (f-string parts too, docstrings not) that holds
    one of ``options`` as a word: ``"(--max-pending-spans)"``, not ``"--short=12"``."""
    skip = _docstrings(tree)
    return [
        (node.lineno, node.value)
        for node in walked(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in skip
        and any(m[0] in options for m in _OPTION_NAME.finditer(node.value))
    ]


def test_library_strings_name_no_command_line_option() -> None:
    """A warning, a gate reason or a report line the library writes names the parameter
    (`max_pending_spans`), not the option: cli/ spells it for the user who typed the option
    (``in_command_terms``), and an OTLP client or a Python caller never typed one."""
    options = _cli_options()
    assert {"--max-pending-spans", "--gate", "--traces", "--token-file"} <= options
    offenders = [
        f"{name}:{line} {text!r}"
        for name, tree in _library_trees()
        for line, text in _strings_naming_options(tree, options)
    ]
    assert offenders == []


def test_the_string_scan_skips_docstrings_and_other_programs_options() -> None:
    tree = ast.parse(
        '"""Module doc: --gate point."""\n'
        "def f():\n"
        '    """Reads --traces."""\n'
        '    run(["git", "rev-parse", "--short=12"])\n'
        '    warn("set --token-file or `token_file`, --tls-cert/--tls-key")\n'
        '    return f"by {x} ms (--min-latency-change-ms)" + "--gate-x --gates"\n'
    )
    options = {"--gate", "--traces", "--token-file", "--tls-cert", "--min-latency-change-ms"}
    assert _strings_naming_options(tree, options) == [
        (5, "set --token-file or `token_file`, --tls-cert/--tls-key"),
        (6, " ms (--min-latency-change-ms)"),
    ]


def _argv_strings(tree: ast.AST) -> set[int]:
    """The ids of the strings in the command line handed to another program: the first
    argument of a ``subprocess`` call (``["git", "rev-parse", "--short=12"]``)."""
    found = set()
    for node in walked(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "subprocess"
        ):
            found.update(
                id(part)
                for arg in node.args[:1]
                for part in ast.walk(arg)
                if isinstance(part, ast.Constant)
            )
    return found


def _strings_naming_flags(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, text) of every string literal (f-string parts too) that holds a ``--flag`` of any
    spelling, spanguard's or not, current or deprecated: docstrings and the command lines of
    other programs aside."""
    skip = _docstrings(tree) | _argv_strings(tree)
    return [
        (node.lineno, node.value)
        for node in walked(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in skip
        and _OPTION.search(node.value)
    ]


def test_library_strings_name_no_flag_at_all() -> None:
    """No library module raises, returns or prints a ``--flag`` — not even one no command has
    (yet), an old spelling, or one in a message the library builds for a caller to print: it
    names the parameter (`tolerance_scale`) and cli/ maps it to the option the user typed."""
    offenders = [
        f"{name}:{line} {text!r}"
        for name, tree in _library_trees()
        for line, text in _strings_naming_flags(tree)
    ]
    assert offenders == []


def test_the_flag_scan_skips_docstrings_and_other_programs_command_lines() -> None:
    tree = ast.parse(
        '"""Module doc: --gate point."""\n'
        "import subprocess\n"
        "def f():\n"
        '    """Reads --traces."""\n'
        '    subprocess.run(["git", "rev-parse", "--short=12"], check=False)\n'
        '    warn("pass --no-such-flag")\n'
        '    hint = f"or {x} --out DIR"\n'
        '    return ["--format", "a--b", "x -- y", "`redact`"]\n'
    )
    assert _strings_naming_flags(tree) == [
        (6, "pass --no-such-flag"),
        (7, " --out DIR"),
        (8, "--format"),
    ]


MAX_MODULE_LINES = 400


def _code_lines(text: str, tree: ast.AST | None = None) -> int:
    """Lines of code: blank lines, comment lines and docstrings are not counted (so the figure
    measures the code, whatever the layout of its comments and documentation). ``tree`` is
    ``text`` parsed, when the caller has it."""
    documentation: set[int] = set()
    for node in walked(tree if tree is not None else ast.parse(text)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                documentation.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return sum(
        1
        for number, line in enumerate(text.splitlines(), 1)
        if line.strip() and not line.lstrip().startswith("#") and number not in documentation
    )


def test_code_lines_leave_out_blanks_comments_and_docstrings() -> None:
    text = (
        '"""Module.\n\nDoc."""\n\n# a comment\nX = 1\n\n\ndef f():\n    """Doc."""\n    return X\n'
    )
    assert _code_lines(text) == 3


def _module_lengths() -> dict[str, int]:
    return {
        path.relative_to(root).as_posix(): _code_lines(
            path.read_text(encoding="utf-8"), parsed(path)
        )
        for root in SOURCES
        for path in sorted(root.rglob("*.py"))
    }


def test_no_module_over_400_lines() -> None:
    """A module is one idea a reader can hold: split a longer one along a real seam. Counted in
    lines of code (blank, comment and docstring lines left out)."""
    lengths = _module_lengths()
    assert len(lengths) > 100, "the walk found too few modules; has the layout moved?"
    long = [
        f"{name} ({count} lines)"
        for name, count in sorted(lengths.items())
        if count > MAX_MODULE_LINES
    ]
    assert long == [], f"modules over {MAX_MODULE_LINES} lines: {long}"


#: Test folders named like no package, each for what it tests across packages. Every other
#: folder of test modules is named like the package it tests (tests/collector for
#: spanguard_processor/collector/, tests/sdk for spanguard), a subfolder like its subpackage.
CROSS_CUTTING_TESTS = {
    "examples": "the repository's examples/ folder, run as a user runs it",
    "files": "hostile and bad input files through every command: inputs/ guards, common/ "
    "writes and cli/ exit codes together",
    "reliability": "the running processor under faults, fuzzing and load: collector/, ingest/, "
    "store/ and the SDK together, in real processes",
    "reports": "both gates' reports (fairness/report/, regression/report/) in a real browser "
    "and read by fairtrace",
}


def code_packages() -> set[str]:
    """The code's packages as test folders name them: ``sdk`` for ``spanguard`` (one flat
    package), each processor package by its path (``fairness``, ``fairness/stats``, …)."""
    processor = SOURCES[1] / "spanguard_processor"
    return {"sdk"} | {
        init.parent.relative_to(processor).as_posix()
        for init in processor.rglob("__init__.py")
        if init.parent != processor
    }


def misplaced_tests(tests: Path, packages: set[str], cross_cutting: Iterable[str]) -> list[str]:
    """Test modules under a folder that is neither a package of the code nor cross-cutting (a
    subfolder of a cross-cutting folder is free). Modules at the top of tests/ hold the
    repository's own rules and are left alone."""
    misplaced = []
    for path in sorted(tests.rglob("test_*.py")):
        folder = path.parent.relative_to(tests)
        free = not folder.parts or folder.parts[0] == "data" or folder.parts[0] in cross_cutting
        if not free and folder.as_posix() not in packages:
            misplaced.append(path.relative_to(tests).as_posix())
    return misplaced


def test_the_test_tree_mirrors_the_code_tree() -> None:
    """A reader looking for the tests of ``store/`` finds them in tests/store/."""
    tests = ROOT / "tests"
    assert {"collector", "ingest", "store", "fairness/stats", "sdk"} <= code_packages()
    misplaced = misplaced_tests(tests, code_packages(), CROSS_CUTTING_TESTS)
    assert misplaced == [], (
        "test modules in a folder named like no package (move each to the folder of the "
        f"package it tests, or name a cross-cutting folder in CROSS_CUTTING_TESTS): {misplaced}"
    )
    unused = sorted(name for name in CROSS_CUTTING_TESTS if not (tests / name).is_dir())
    assert unused == [], f"cross-cutting test folders that do not exist: {unused}"


def test_the_tree_scan_finds_a_test_in_a_folder_of_no_package(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "test_rules.py": "",
            "store/test_store.py": "",
            "fairness/stats/test_bounds.py": "",
            "processor/test_store.py": "",
            "fairness/misc/test_x.py": "",
            "reliability/deep/test_load.py": "",
            "data/tool/test_example.py": "",
        },
    )
    found = misplaced_tests(tmp_path, {"store", "fairness", "fairness/stats"}, {"reliability"})
    assert found == ["fairness/misc/test_x.py", "processor/test_store.py"]


def functions_named_like_tests(paths: Iterable[Path]) -> list[str]:
    """Functions and classes outside test modules named as pytest collects tests (``test*``,
    ``Test*``): a library or helper function named so reads as a test, and is collected as one
    by any test module that imports it by name."""
    found = []
    for path in paths:
        where = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
        for node in nodes(path):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and (
                node.name.startswith("Test" if isinstance(node, ast.ClassDef) else "test")
            ):
                found.append(f"{where}:{node.lineno}: {node.name}")
    return found


def test_no_function_outside_the_test_modules_is_named_like_a_test() -> None:
    code = [path for root in SOURCES for path in sorted(root.rglob("*.py"))]
    helpers = [
        path
        for path in sorted((ROOT / "tests").rglob("*.py"))
        if not path.name.startswith("test_") and "data" not in path.relative_to(ROOT).parts
    ]
    assert len(code) > 100 and len(helpers) > 20, "the walk found too few files"
    named = functions_named_like_tests(code + helpers)
    assert named == [], f"functions named like tests outside test modules: {named}"


def test_the_name_scan_finds_functions_and_classes_pytest_would_collect(tmp_path: Path) -> None:
    module = tmp_path / "helper.py"
    module.write_text(
        "def test_quantile(x):\n    return x\n\n\nclass TestData:\n    pass\n\n\n"
        "def tested():\n    pass\n\n\nclass Tester:\n    pass\n\n\ndef quantile_test():\n"
        "    pass\n\n\nclass Data:\n    def test_shape(self):\n        pass\n"
    )
    names = [line.rsplit(" ", 1)[1] for line in functions_named_like_tests([module])]
    assert names == ["test_quantile", "TestData", "tested", "Tester", "test_shape"]


_IMPORTS_CLAIM = re.compile(r"Imports ((?:``\w+``(?:, | and )?)+)(?: only)?\.")


def test_each_package_docstring_says_what_its_package_imports() -> None:
    """A package whose ``__init__`` docstring says "Imports ``a`` and ``b``." imports exactly
    those packages of the processor (collector/'s named ``traces`` long after it stopped)."""
    graph = import_graph(SOURCES, PACKAGES)
    processor = SOURCES[1] / "spanguard_processor"
    wrong, claims = [], 0
    for init in sorted(processor.glob("*/__init__.py")):
        doc = ast.get_docstring(parsed(init)) or ""
        claim = _IMPORTS_CLAIM.search(" ".join(doc.split()))
        if claim is None:
            continue
        claims += 1
        package = init.parent.name
        said = set(re.findall(r"``(\w+)``", claim.group(1)))
        imported = {
            target.split(".")[1]
            for module, edges in graph.items()
            if module.startswith(f"spanguard_processor.{package}")
            for target in edges
            if target.startswith("spanguard_processor.") and target.split(".")[1] != package
        }
        if said != imported:
            wrong.append(f"{package}: says {sorted(said)}, imports {sorted(imported)}")
    assert claims >= 3, "the scan found too few claims; has the docstrings' wording moved?"
    assert wrong == [], f"package docstrings naming the wrong imports: {wrong}"
