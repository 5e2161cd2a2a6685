"""The SDK installs light: OpenTelemetry only; the processor and CLI come with an extra.

An app team adds spanguard to a production image for the SDK alone; it must not pull in the
evaluators' numeric stack or the processor's web server. The fresh-venv test installs the
committed tree exactly as a user would (``pip install <clone>``, no extra).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import venv
from importlib import metadata
from pathlib import Path

import pytest

import spanguard
from spanguard._runtime import UNKNOWN_VERSION, installed_version, instrumentation_version
from spanguard.testing import SpanCapture
from spanguard_processor._entry import INSTALL_HINT, OPTIONAL, REQUIRED

ROOT = Path(__file__).resolve().parents[2]
#: distributions the SDK alone must never install
HEAVY = {"numpy", "scipy", "click", "starlette", "uvicorn", "orjson", "pyyaml"}


def _pyproject() -> dict[str, object]:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _name(requirement: str) -> str:
    for stop in "<>=!~[; ":
        requirement = requirement.split(stop, 1)[0]
    return requirement.strip().lower()


def test_runtime_dependencies_are_opentelemetry_only() -> None:
    project = _pyproject()["project"]
    assert isinstance(project, dict)
    names = {_name(r) for r in project["dependencies"]}
    assert names and all(n.startswith("opentelemetry-") for n in names), names


def test_the_processor_extra_holds_every_dependency_the_cli_checks_for() -> None:
    project = _pyproject()["project"]
    assert isinstance(project, dict)
    extra = {_name(r) for r in project["optional-dependencies"]["processor"]}
    assert set(REQUIRED.values()) | set(OPTIONAL.values()) == extra
    optional = {_name(r) for r in project["optional-dependencies"]["processor"] if ";" in r}
    assert optional == set(OPTIONAL.values())  # only these have platform markers
    assert "spanguard[processor]" in project["optional-dependencies"]["dev"]


def test_the_dependency_check_imports_none_of_the_dependencies() -> None:
    """The console script's check runs before anything needs the processor extra."""
    code = (
        "import sys, spanguard_processor._entry as e, spanguard_processor as p\n"
        "heavy = sorted(m for m in e.REQUIRED if m in sys.modules)\n"
        "assert not heavy, heavy\n"
        "assert p.AgentTrace.__name__ == 'AgentTrace'  # the package's names still load\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr


# --- the instrumentation scope's version -----------------------------------------------------
def test_spans_carry_the_installed_distributions_version(capture: SpanCapture) -> None:
    @spanguard.tool
    def step() -> int:
        return 1

    step()
    (span,) = capture.readable_spans()
    assert span.instrumentation_scope is not None
    assert span.instrumentation_scope.name == "spanguard"
    assert span.instrumentation_scope.version == metadata.version("spanguard")
    assert instrumentation_version() == metadata.version("spanguard")


def test_the_version_is_read_from_the_metadata_found_first(tmp_path: Path) -> None:
    # a distribution "spanguard 9.8.7" ahead of the installed one on the path: its version wins
    info = tmp_path / "spanguard-9.8.7.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: spanguard\nVersion: 9.8.7\n", encoding="utf-8"
    )
    code = textwrap.dedent("""
        import spanguard
        from spanguard.testing import capture_spans
        @spanguard.tool
        def step():
            return 1
        with capture_spans() as capture:
            step()
        print(capture.readable_spans()[0].instrumentation_scope.version)
    """)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])]
        ),
    }
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "9.8.7"


def test_without_installed_metadata_the_version_says_unknown() -> None:
    assert installed_version("spanguard-never-installed") == UNKNOWN_VERSION == "0+unknown"


def _clean_env() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH", "PYTEST"))
    }
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if ".venv" not in p)
    return env


@pytest.mark.slow
@pytest.mark.integration
def test_the_sdk_alone_installs_no_heavy_packages_and_the_cli_says_what_to_install(
    tmp_path: Path,
) -> None:
    target = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(target)
    python = target / "bin" / "python"
    env = _clean_env()
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(ROOT)],
        check=True,
        env=env,
        timeout=600,
        capture_output=True,
    )

    listed = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=json"],
        check=True,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    installed = {p["name"].lower() for p in json.loads(listed)}
    assert "spanguard" in installed
    assert not HEAVY & installed, sorted(HEAVY & installed)

    # the SDK works end to end with what is installed
    script = (
        "import spanguard\n"
        "spanguard.configure(exporter='memory', private=True)\n"
        "@spanguard.tool\n"
        "def add(a, b): return a + b\n"
        "assert add(1, 2) == 3\n"
        "assert spanguard.export_stats().exported == 1\n"
    )
    subprocess.run([str(python), "-c", script], check=True, env=env, timeout=120)

    # the CLI without the processor's dependencies: one line naming the extra, exit code 2
    result = subprocess.run(
        [str(target / "bin" / "spanguard"), "--version"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert INSTALL_HINT in result.stderr


def test_the_cli_runs_when_the_processor_dependencies_are_installed() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "spanguard_processor", "--version"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("spanguard, version ")


def test_the_cli_without_its_dependencies_prints_one_line_naming_the_extra() -> None:
    # the fresh-venv test above does this for real; here the missing modules are simulated
    code = (
        "import sys\n"
        "sys.modules['click'] = None\n"
        "sys.modules['scipy'] = None\n"
        "from spanguard_processor._entry import main\n"
        "main(['demo'])\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2
    assert result.stderr == (
        "spanguard: the command line needs the processor's dependencies, "
        "which are not installed (click, scipy); install them with: "
        f"{INSTALL_HINT}\n"
    )
