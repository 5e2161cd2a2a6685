"""docs/adapters.md runs as written: every Python block, and every command line of the blocks
marked "tested", against a local OpenAI-compatible stub."""

from __future__ import annotations

import re
import shlex
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanguard_processor.cli import cli

from .openai_stub import openai_stub, support_answer

ROOT = Path(__file__).parents[2]
DATA = ROOT / "tests" / "data"
_BLOCK = re.compile(r"```(\w*)\n(.*?)```", re.S)
_MYAGENT = """
from openai import OpenAI

client = OpenAI()


def lookup(query: str) -> str:
    return f"2 articles about {query}"


TOOLS = {"kb_lookup": lookup}
"""


def _blocks() -> list[tuple[str, str, bool]]:
    page = (ROOT / "docs" / "adapters.md").read_text(encoding="utf-8")
    out = []
    for match in _BLOCK.finditer(page):
        before = page[: match.start()].rstrip().splitlines()[-1]
        out.append((match.group(1), match.group(2), "ested" in before))
    return out


def _workspace(tmp: Path) -> None:
    assert CliRunner().invoke(cli, ["init", "-o", str(tmp / "fairness.yaml")]).exit_code == 0
    (tmp / "myagent.py").write_text(_MYAGENT)
    shutil.copy(DATA / "adapters" / "tools.json", tmp / "tools.json")
    for item in (DATA / "promptfoo").iterdir():
        if item.name != "results":
            (shutil.copytree if item.is_dir() else shutil.copy)(item, tmp / item.name)
    shutil.copy(DATA / "promptfoo" / "results" / "results-biased.json", tmp / "results.json")
    shutil.copy(DATA / "deepeval" / "goldens.jsonl", tmp / "goldens.jsonl")


@pytest.mark.slow
@pytest.mark.integration
def test_every_example_on_the_adapters_page_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocks = _blocks()
    assert sum(1 for lang, _, _ in blocks if lang == "python") >= 2
    assert sum(1 for lang, _, tested in blocks if lang == "bash" and tested) >= 3
    _workspace(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    with openai_stub(support_answer(biased=False)) as stub:
        monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        for lang, code, tested in blocks:
            if lang == "python":
                exec(compile(code, "docs/adapters.md", "exec"), {"__name__": "docs_example"})
            elif lang == "bash" and tested:
                for line in code.strip().splitlines():
                    args = shlex.split(line)
                    assert args[0] == "spanguard", line
                    result = CliRunner().invoke(cli, args[1:])
                    assert result.exit_code in (0, 1), (line, result.output)
                    assert result.exception is None or isinstance(result.exception, SystemExit)
    sys.modules.pop("myagent", None)
    assert (tmp_path / "calls.jsonl").exists() and (tmp_path / "reports" / "history.jsonl").exists()
    assert (tmp_path / "records.jsonl").exists() and (tmp_path / "goldens.json").exists()
