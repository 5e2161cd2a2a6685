from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPANGUARD = [sys.executable, "-m", "spanguard_processor"]


@pytest.fixture(scope="session")
def t2e_fixtures(peer_fixtures: Path) -> Path:
    return peer_fixtures / "trace2eval"


@pytest.fixture()
def workdir(tmp_path: Path, t2e_fixtures: Path) -> Path:
    """trace2eval's fixture layout: examples/ with the logs, evalset/ with expectations."""
    (tmp_path / "examples").mkdir()
    for name in ("sample_traces.jsonl", "outputs_baseline.jsonl", "outputs_regressed.jsonl"):
        shutil.copy(t2e_fixtures / name, tmp_path / "examples" / name)
    (tmp_path / "evalset").mkdir()
    shutil.copy(t2e_fixtures / "expectations.jsonl", tmp_path / "evalset" / "expectations.jsonl")
    return tmp_path


def run(cmd: list[str], cwd: Path, seed: str = "0") -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONIOENCODING="utf-8")
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env, timeout=120)
