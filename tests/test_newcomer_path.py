"""The newcomer path runs as written: every command block of README.md and docs/quickstart.md.

Each line of a ```bash block runs in bash, in order, in one work folder, with this checkout's
``spanguard`` and ``python`` first on PATH, and must exit with the code its comment names
(``# exit 1: ...``), else 0. The quickstart's ``my_agent.py`` block is written to that file,
and the verdict lines of the ```text block after a command block (``PASS refusal_gap ...``)
must be the ones the commands printed, in order. The quickstart's install block runs in a
fresh clone (slow); the README's Quick start block has its own test (tests/test_readme.py).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)
_VERDICT = re.compile(r"^(PASS|FAIL|INCONCLUSIVE|NO_SIGNAL)\s+(\w+)", re.M)
_GATE = re.compile(r"^fairness gate (PASSED|FAILED)", re.M)


@dataclass(frozen=True)
class Block:
    lang: str
    text: str
    before: str  # the prose between the previous block and this one


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    out = []
    end = 0
    for match in _BLOCK.finditer(text):
        out.append(Block(match.group(1), match.group(2), text[end : match.start()]))
        end = match.end()
    return out


def commands(block: Block) -> list[str]:
    return [
        line
        for line in block.text.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


def expected_exit(line: str) -> int:
    comment = line.split("  #", 1)[1] if "  #" in line else ""
    found = re.search(r"\bexit (\d)\b", comment)
    return int(found.group(1)) if found else 0


def verdicts(text: str) -> list[tuple[str, str]]:
    return _VERDICT.findall(text) + [("gate", g) for g in _GATE.findall(text)]


def _env(bin_dir: Path, home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("VIRTUAL_ENV", "PYTEST", "SPANGUARD_", "PYTHON", "MY_AGENT"))
    }
    env["PATH"] = os.pathsep.join([str(bin_dir), env.get("PATH", "")])
    env["HOME"] = str(home)
    return env


def run_page(page: Path, work: Path, env: dict[str, str], *, skip_install: bool) -> None:
    """Run every command block of ``page`` in ``work``, checking exit codes and verdicts."""
    items = blocks(page)
    for index, block in enumerate(items):
        if block.lang == "python" and "`my_agent.py`" in block.before:
            (work / "my_agent.py").write_text(block.text, encoding="utf-8")
            continue
        if block.lang != "bash":
            continue
        if "pip install" in block.text:
            if skip_install:
                continue
            result = subprocess.run(
                ["bash", "-e", "-c", block.text],
                cwd=work,
                env=env,
                capture_output=True,
                text=True,
                timeout=900,
            )
            assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
            continue
        printed = []
        for line in commands(block):
            result = subprocess.run(
                ["bash", "-c", line], cwd=work, env=env, capture_output=True, text=True, timeout=600
            )
            printed.append(result.stdout)
            assert result.returncode == expected_exit(line), (
                f"{page.name}: `{line}` exited {result.returncode}, expected "
                f"{expected_exit(line)}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
            )
        shown = items[index + 1] if index + 1 < len(items) else None
        if shown is not None and shown.lang == "text" and verdicts(shown.text):
            assert verdicts("".join(printed)) == verdicts(shown.text), (
                f"{page.name}: the output shown after\n{block.text}\nis not what it prints:\n"
                + "".join(printed)
            )


def _venv_bin() -> Path:
    return Path(sys.executable).parent


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.timeout(900)
def test_every_quickstart_block_runs_as_written(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    run_page(ROOT / "docs" / "quickstart.md", work, _env(_venv_bin(), tmp_path), skip_install=True)
    assert (work / "reports" / "pr" / "report.json").is_file()
    _assert_replayed(work / "runs" / "main-replay.json", work / "runs" / "pr-replay.json")


def _assert_replayed(*runs: Path) -> None:
    """The replay loop called the agent itself: every case 3 times, each run with the process
    its spans recorded (the candidate's refused loan question calls no tool)."""
    tools = []
    for path in runs:
        repeats = json.loads(path.read_text(encoding="utf-8"))["repeats"]
        assert repeats and all(len(runs_of_case) == 3 for runs_of_case in repeats.values())
        tools.append({case: [r["tools"] for r in rs] for case, rs in repeats.items()})
    baseline, candidate = tools
    assert any(["lookup_account"] in calls for calls in baseline.values())
    assert baseline != candidate


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.timeout(900)
def test_every_readme_command_block_runs_as_written(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    agent = next(
        b
        for b in blocks(ROOT / "docs" / "quickstart.md")
        if b.lang == "python" and "`my_agent.py`" in b.before
    )
    (work / "my_agent.py").write_text(agent.text, encoding="utf-8")
    page = ROOT / "README.md"
    # the Quick start block (a fresh clone, a venv, the demo) runs in tests/test_readme.py
    quick = [b for b in blocks(page) if b.lang == "bash" and "spanguard demo" in b.text]
    assert len(quick) == 1
    text = page.read_text(encoding="utf-8").replace(quick[0].text, "")
    trimmed = tmp_path / "README.md"
    trimmed.write_text(text, encoding="utf-8")
    run_page(trimmed, work, _env(_venv_bin(), tmp_path), skip_install=True)
    assert (work / "junit.xml").is_file() and (work / "reports" / "recorded").is_dir()
    _assert_replayed(work / "runs" / "main.json", work / "runs" / "pr.json")


def test_the_block_reader_sees_every_command_and_its_expected_exit() -> None:
    readme = [b for b in blocks(ROOT / "README.md") if b.lang == "bash"]
    lines = [line for b in readme for line in commands(b)]
    assert any(line.startswith("spanguard init") for line in lines)
    assert any(expected_exit(line) == 1 for line in lines)
    assert expected_exit("spanguard run x  # writes fairness.yaml") == 0
    assert expected_exit("spanguard check  # exit 1: a case regressed") == 1


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_quickstart_install_block_works_in_a_fresh_clone(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    clone = tmp_path_factory.mktemp("empty") / "spanguard"
    home = tmp_path_factory.mktemp("home")
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=120)
    env = _env(clone / ".venv" / "bin", home)
    env["PATH"] = os.pathsep.join(
        p for p in env["PATH"].split(os.pathsep) if ".venv" not in p or p.startswith(str(clone))
    )
    install = next(
        b
        for b in blocks(clone / "docs" / "quickstart.md")
        if b.lang == "bash" and "pip install" in b.text
    )
    result = subprocess.run(
        ["bash", "-e", "-c", install.text],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "spanguard, version" in result.stdout
    run_page(clone / "docs" / "quickstart.md", clone, env, skip_install=True)
