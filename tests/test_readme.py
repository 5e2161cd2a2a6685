"""The README's two Quick start commands work from a fresh clone, each on its own.

The commands run exactly as written (in bash, from a new clone of the committed tree). Two
standard mechanisms keep the run short: the demo's size comes from its options' environment
variables (SPANGUARD_DEMO_QUESTIONS/PROFILES), and the test command's selection from
PYTEST_ADDOPTS (two test modules, given as paths) — so the clone's test run is a smoke subset,
not the whole suite again.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def quick_start_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block, "the Quick start has no bash block"
    return [line for line in block.group(1).splitlines() if line and not line.startswith("#")]


def test_quick_start_has_exactly_two_commands() -> None:
    commands = quick_start_commands()
    assert len(commands) == 2
    assert commands[0].endswith("spanguard demo")
    assert "pytest" in commands[1]
    assert commands[1] in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(1800)  # two venv installs and a demo: minutes on a busy 2-core machine
def test_both_commands_work_from_a_fresh_clone(tmp_path_factory: pytest.TempPathFactory) -> None:
    # The clone sits alone in an empty folder, and HOME is an empty folder too, as on a new
    # user's machine.
    clone = tmp_path_factory.mktemp("empty") / "spanguard"
    home = tmp_path_factory.mktemp("home")
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=120)
    assert sorted(p.name for p in clone.parent.iterdir()) == ["spanguard"]
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("VIRTUAL_ENV", "PYTEST", "SPANGUARD_", "PYTHON"))
    }
    env["HOME"] = str(home)
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if ".venv" not in p)
    demo, tests = quick_start_commands()

    demo_env = dict(env, SPANGUARD_DEMO_QUESTIONS="12", SPANGUARD_DEMO_PROFILES="45")
    result = subprocess.run(
        ["bash", "-c", demo], cwd=clone, env=demo_env, capture_output=True, text=True, timeout=900
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "Demo OK" in result.stdout
    assert (
        clone / "spanguard-demo" / "fairness" / "candidate" / "gender" / "report.html"
    ).is_file()

    # two modules, named as paths: the clone collects only them, not the whole suite first
    smoke = "tests/traces/test_model.py tests/traces/test_formats.py"
    test_env = dict(env, PYTEST_ADDOPTS=f"-q -p no:cacheprovider {smoke}")
    result = subprocess.run(
        ["bash", "-c", tests], cwd=clone, env=test_env, capture_output=True, text=True, timeout=900
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert re.search(r"\d+ passed", result.stdout)
