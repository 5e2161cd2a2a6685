"""`spanguard demo` from an installed wheel, far from any checkout.

The wheel is built from this checkout (hatchling, no network) and installed into a new virtual
environment. Its dependencies come from the test run's own environment, added as a plain path
(a ``.pth`` line: the editable install's own ``.pth`` there is not processed), so nothing is
downloaded and the ``spanguard_processor`` that runs is the wheel's. The demo then runs from an
empty folder: it must find the example agent inside the installed package.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.demo.test_demo import discrim_eval_like

ROOT = Path(__file__).resolve().parents[2]


def _build_wheel(dist: Path) -> Path:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--quiet",
            "-w",
            str(dist),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    wheels = list(dist.glob("spanguard-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def _venv_with(wheel: Path, venv: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
    )
    python = venv / "bin" / "python"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "--no-index",
            "--quiet",
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(site) / "_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_demo_runs_from_an_installed_wheel(tmp_path: Path) -> None:
    wheel = _build_wheel(tmp_path / "dist")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert "spanguard_processor/demo/support_agent.py" in names
    assert "spanguard_processor/demo/app_process.py" in names

    python = _venv_with(wheel, tmp_path / "venv")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("VIRTUAL_ENV", "PYTEST", "SPANGUARD_", "PYTHON"))
    }
    env["HOME"] = str(tmp_path)
    located = subprocess.run(
        [
            str(python),
            "-c",
            "import spanguard_processor, spanguard; "
            "print(spanguard_processor.__file__); print(spanguard.__file__)",
        ],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert located.returncode == 0, located.stderr
    for line in located.stdout.splitlines():  # the wheel's packages, not the checkout's
        assert line.startswith(str(tmp_path / "venv")), located.stdout

    data = discrim_eval_like(tmp_path / "explicit.jsonl", questions=6)
    result = subprocess.run(
        [
            str(tmp_path / "venv" / "bin" / "spanguard"),
            "demo",
            "--data",
            str(data),
            "-o",
            str(elsewhere / "demo"),
            "--bias",
            "1",
        ],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "Demo OK" in result.stdout
    assert (elsewhere / "demo" / "fairness" / "candidate" / "gender" / "report.json").is_file()
