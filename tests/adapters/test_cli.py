"""``spanguard run --adapter``: exit codes and messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanguard_processor.cli import cli

from .openai_stub import chat_completion, openai_stub

_FAST = ["--bootstrap", "200", "--permutations", "99"]


def _suite(tmp_path: Path, seeds: int = 8) -> Path:
    path = tmp_path / "suite.json"
    path.write_text(
        json.dumps(
            {
                "dataset": {
                    "prompts": [
                        {
                            "id": f"seed{i}",
                            "prompt": f"Case {i}: a {{gender}} customer asks about refunds.",
                            "attributes": {"gender": ["man", "woman"]},
                        }
                        for i in range(seeds)
                    ]
                },
                "metrics": [{"type": "tool_use_parity"}],
            }
        )
    )
    return path


def test_run_with_langgraph_adapter_gates_a_biased_graph(tmp_path: Path) -> None:
    # 30 seeds: the fair graph's variants agree, so its gap is shown within 0.1 (8 seeds
    # are INCONCLUSIVE: about 29 are needed)
    suite = _suite(tmp_path, seeds=30)
    fair = CliRunner().invoke(
        cli,
        [
            "run",
            str(suite),
            "--adapter",
            "langgraph",
            "--app",
            "tests.adapters.apps:fair_graph",
            *_FAST,
        ],
    )
    assert fair.exit_code == 0, fair.output
    out = tmp_path / "out"
    biased = CliRunner().invoke(
        cli,
        [
            "run",
            str(suite),
            "--adapter",
            "langgraph",
            "--app",
            "tests.adapters.apps:biased_graph",
            "-o",
            str(out),
            *_FAST,
        ],
    )
    assert biased.exit_code == 1, biased.output
    assert biased.output.endswith("fairness gate FAILED: tool_use_parity\n")
    report = json.loads((out / "report.json").read_text())
    assert len(report["scenario_results"]) == 60


@pytest.mark.integration
def test_run_with_openai_adapter_and_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = _suite(tmp_path, seeds=3)
    with openai_stub(lambda path, body: chat_completion(None)) as stub:
        monkeypatch.setenv("SPANGUARD_TEST_OPENAI_URL", stub.base_url)
        silent = CliRunner().invoke(
            cli,
            [
                "run",
                str(suite),
                "--adapter",
                "openai-chat",
                "--app",
                "tests.adapters.apps:stub_client",
                "--adapter-option",
                "model=gpt-4o-mini",
                *_FAST,
            ],
        )
    assert silent.exit_code == 2, silent.output
    # stderr: the design's power table (printed before the first app call), then the error
    assert silent.stderr.startswith("design: 3 seeds × 2 groups × 1 repeat, 6 app calls\n")
    assert silent.stderr.endswith(
        "\nError: the openai-chat adapter: the chat completion has no text (got NoneType); "
        "expected a response whose output holds a text message. (5 more call(s) failed the "
        "same way.)\n"
    )
    with openai_stub(lambda path, body: chat_completion("Refunds take 5 days.")) as stub:
        monkeypatch.setenv("SPANGUARD_TEST_OPENAI_URL", stub.base_url)
        ok = CliRunner().invoke(
            cli,
            [
                "run",
                str(suite),
                "--adapter",
                "openai-chat",
                "--app",
                "tests.adapters.apps:stub_client",
                "--adapter-option",
                "model=gpt-4o-mini",
                "--adapter-option",
                "system=Group {gender}.",
                *_FAST,
            ],
        )
    # the run completes; the stub model calls no tool, so tool_use_parity has nothing to read
    assert ok.exit_code == 1, ok.output
    assert ok.output.endswith("fairness gate FAILED: tool_use_parity (NO_SIGNAL)\n"), ok.output
    assert stub.requests[0][1]["messages"][0] == {"role": "system", "content": "Group man."}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--adapter", "crewai", "--app", "tests.adapters.apps:fair_graph"],
            "Error: the crewai adapter: there is no adapter named 'crewai'; choose one of "
            "langchain, "
            "langgraph, openai-agents, openai-chat, openai-responses.\n",
        ),
        (
            ["--adapter", "langgraph", "--app", "tests.adapters.apps:uncompiled"],
            "Error: the langgraph adapter: StateGraph is not a compiled LangGraph graph (call "
            ".compile() on the StateGraph first); expected the result of "
            "StateGraph(...).compile().\n",
        ),
        (
            ["--adapter", "openai-chat", "--app", "tests.adapters.apps:fair_graph"],
            "Error: the openai-chat adapter: CompiledStateGraph has no chat.completions.create() "
            "method; expected an openai.OpenAI or openai.AsyncOpenAI client.\n",
        ),
        (
            [
                "--adapter",
                "langgraph",
                "--app",
                "tests.adapters.apps:fair_graph",
                "--adapter-option",
                "model=x",
            ],
            "Error: the langgraph adapter: unknown option 'model'; this adapter takes "
            "input_builder, input_key, output_key, trace_mapper, use_async.\n",
        ),
        (
            [
                "--adapter",
                "langgraph",
                "--app",
                "tests.adapters.apps:fair_graph",
                "--adapter-option",
                "use_async=maybe",
            ],
            "Error: the langgraph adapter: option 'use_async' must be true or false, not "
            "'maybe'.\n",
        ),
        (
            [
                "--adapter",
                "langgraph",
                "--app",
                "tests.adapters.apps:fair_graph",
                "--adapter-option",
                "use_async",
            ],
            "Error: the langgraph adapter: --adapter-option 'use_async' must have the form "
            "KEY=VALUE, "
            "e.g. model=gpt-4o-mini.\n",
        ),
        (
            ["--app", "tests.adapters.apps:fair_graph", "--adapter-option", "model=x"],
            "Error: field '--adapter-option': needs --adapter NAME (openai-chat, openai-responses, "
            "openai-agents, langchain or langgraph).\n",
        ),
        (
            ["--adapter", "langgraph", "--app", "tests.adapters.apps:missing"],
            "Error: the langgraph adapter: --app 'tests.adapters.apps:missing': module "
            "tests.adapters.apps has no attribute 'missing'.\n",
        ),
    ],
)
def test_adapter_mistakes_are_bad_input(tmp_path: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, ["run", str(_suite(tmp_path, seeds=2)), *args])
    assert result.exit_code == 2
    assert result.output == message
