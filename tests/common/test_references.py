"""``module:attribute`` references: one resolver, one set of messages, and the working directory
importable only through the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanguard.exceptions import ConfigError
from spanguard_processor.cli import cli
from spanguard_processor.common.references import import_module, resolve

ROOT = Path(__file__).resolve().parents[2]


def _config_error(message: str) -> ConfigError:
    return ConfigError("--hook", message)


@pytest.mark.parametrize(
    ("reference", "kind", "message"),
    [
        ("os.path", "function", "the hook 'os.path' must have the form module:function."),
        ("os:", "function", "the hook 'os:' must have the form module:function."),
        (":getcwd", "object", "the hook ':getcwd' must have the form module:object."),
        ("os:1x", "function", "the hook 'os:1x' must have the form module:function."),
        (
            "no_such_module_xyz:f",
            "function",
            "the hook 'no_such_module_xyz:f' cannot be imported: No module named "
            "'no_such_module_xyz'.",
        ),
        (
            "os:no_such_function",
            "function",
            "the hook 'os:no_such_function': module os has no attribute 'no_such_function'.",
        ),
        (
            "os.path:nope.deeper",
            "object",
            "the hook 'os.path:nope.deeper': module os.path has no attribute 'nope.deeper'.",
        ),
        ("os:sep", "function", "the hook 'os:sep' is not callable."),
    ],
)
def test_every_mistake_has_one_message(reference: str, kind: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        resolve(reference, "the hook", error=_config_error, kind=kind)  # type: ignore[arg-type]
    assert info.value.detail == message


def test_a_reference_resolves_dotted_attributes_and_any_object() -> None:
    assert resolve("os.path:join", "the hook", error=_config_error) is __import__("os").path.join
    assert resolve("json:JSONDecoder.decode", "the hook", error=_config_error) is (
        json.JSONDecoder.decode
    )
    assert resolve("os:sep", "the hook", error=_config_error, kind="object") == __import__("os").sep


def test_a_module_that_fails_while_importing_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "crashing_module_xyz.py").write_text("raise RuntimeError('no config file')\n")
    (tmp_path / "attr_crash_xyz.py").write_text("import os\nos.no_such_thing\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError) as info:
        resolve("crashing_module_xyz:f", "the hook", error=_config_error)
    assert info.value.detail == (
        "the hook 'crashing_module_xyz:f' cannot be imported: RuntimeError: no config file."
    )
    with pytest.raises(ConfigError) as info:
        resolve("attr_crash_xyz:f", "the hook", error=_config_error)
    assert info.value.detail.startswith(
        "the hook 'attr_crash_xyz:f' cannot be imported: AttributeError: "
    )


def test_a_plugin_is_a_module_name() -> None:
    assert import_module("json", "the plugin", error=_config_error) is json
    for name, message in (
        ("json:loads", "must be a module name, e.g. my_metrics."),
        ("no_such_plugin_xyz", "cannot be imported: No module named 'no_such_plugin_xyz'."),
    ):
        with pytest.raises(ConfigError) as info:
            import_module(name, "the plugin", error=_config_error)
        assert info.value.detail == f"the plugin '{name}' {message}"


def test_the_library_does_not_make_the_working_directory_importable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cwd_only_module_xyz.py").write_text("def answer(p, a):\n    return 'ok'\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    before = list(sys.path)
    with pytest.raises(ConfigError, match="cannot be imported"):
        resolve("cwd_only_module_xyz:answer", "the hook", error=_config_error)
    assert sys.path == before


@pytest.mark.slow
def test_the_command_line_imports_the_app_and_plugins_from_the_working_directory(
    tmp_path: Path,
) -> None:
    (tmp_path / "local_app.py").write_text(
        "def answer(prompt, assignments):\n    return 'Sure, here is how.'\n"
    )
    (tmp_path / "local_metrics.py").write_text("LOADED = True\n")
    (tmp_path / "suite.json").write_text(
        json.dumps(
            {
                "dataset": {
                    "prompts": [
                        {
                            "id": f"seed{i}",
                            "prompt": f"Case {i}: a {{gender}} customer asks.",
                            "attributes": {"gender": ["man", "woman"]},
                        }
                        for i in range(60)
                    ]
                },
                # 60 seeds: a deterministic fair app's exact bound (1 − 0.05^(1/60) = 0.049) is
                # under refusal_gap's 0.05, so it PASSes (on 4 seeds it is inconclusive)
                "metrics": [{"type": "refusal_gap"}],
            }
        )
    )
    command = [
        sys.executable,
        "-m",
        "spanguard_processor",
        "run",
        "suite.json",
        "--app",
        "local_app:answer",
        "--plugin",
        "local_metrics",
        "--bootstrap",
        "50",
        "--permutations",
        "19",
    ]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.endswith("fairness gate PASSED\n")


def test_command_line_reference_mistakes_are_bad_input(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "fairness",
            str(tmp_path / "suite.json"),
            str(tmp_path / "t.jsonl"),
            "--plugin",
            "no_plugin_xyz",
        ],
    )
    assert result.exit_code == 2
    assert result.output == (
        "Error: --plugin: the plugin 'no_plugin_xyz' cannot be imported: "
        "No module named 'no_plugin_xyz'.\n"
    )
    result = CliRunner().invoke(
        cli, ["serve", "--store", str(tmp_path / "s.db"), "--redact-hook", "os:no_such_function"]
    )
    assert result.exit_code == 2
    assert result.output == (
        "Error: --redact-hook: the redaction hook 'os:no_such_function': "
        "module os has no attribute 'no_such_function'.\n"
    )


def test_no_library_module_edits_sys_path() -> None:
    """Only ``cli/`` may touch ``sys.path`` (checked over the source, lazy code included)."""
    import ast

    offenders = []
    for root in (
        ROOT / "sdk" / "src" / "spanguard",
        ROOT / "collector_processor" / "src" / "spanguard_processor",
    ):
        for path in sorted(root.rglob("*.py")):
            if "cli" in path.relative_to(root).parts[:-1]:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (
                    isinstance(node, ast.Attribute)
                    and node.attr == "path"
                    and isinstance(node.value, ast.Name)
                    and node.value.id == "sys"
                ):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def test_a_similarity_matcher_may_be_dotted_as_trace2eval_accepts() -> None:
    from spanguard_processor.regression.mine.build import load_matcher

    for spec in ("operator.eq", "operator:eq"):
        matcher = load_matcher(spec)
        assert (matcher("a", "a"), matcher("a", "b")) == (1.0, 0.0)
