"""The issue's table, from the command line: for each kind of app, an agent of our own with a
planted difference is caught and its fair version passes (30 seeds: a fair app whose variants
agree is shown within 0.1 from 29)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from spanguard_processor.cli import cli

from .openai_stub import chat_completion, openai_stub, response

_FAST = ["--bootstrap", "300", "--permutations", "199"]
_TOOLS = str(Path(__file__).parents[1] / "data" / "adapters" / "tools.json")


def _suite(
    tmp_path: Path,
    metrics: list[str],
    seeds: int = 30,
    prompt: str = "Case {i}: where is my refund?",
) -> Path:
    path = tmp_path / "suite.json"
    path.write_text(
        json.dumps(
            {
                "dataset": {
                    "prompts": [
                        {
                            "id": f"seed{i}",
                            "prompt": prompt.replace("{i}", str(i)),
                            "attributes": {"gender": ["man", "woman"]},
                        }
                        for i in range(seeds)
                    ]
                },
                "metrics": [
                    {"type": m, **({"max_difference": _RANGES[m]} if m in _RANGES else {})}
                    for m in metrics
                ],
            }
        )
    )
    return path


# a count's exact bounds need its range stated: these apps' groups differ by at most 2 calls
_RANGES = {"tool_count_gap": 2}


def _run(suite: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, ["run", str(suite), *args, *_FAST])


def _group(body: dict[str, Any]) -> str:
    first = body["messages"][0]["content"] if "messages" in body else body["instructions"]
    return "woman" if "woman" in first else "man"


def _tool_script(biased: bool, api: str) -> Any:
    """Everyone's first turn asks for kb_lookup; men (only, when biased) get refund_status
    too; once the tools' outputs are back, the model answers."""

    def answer(path: str, body: dict[str, Any]) -> dict[str, Any]:
        items = body.get("messages") or body.get("input")
        done = isinstance(items, list) and any(
            isinstance(i, dict)
            and (i.get("role") == "tool" or i.get("type") == "function_call_output")
            for i in items
        )
        calls = [("call_1", "kb_lookup", '{"query": "refund"}')]
        if not biased or _group(body) == "man":
            calls.append(("call_2", "refund_status", '{"order_id": "A7"}'))
        if api == "chat":
            return chat_completion(
                "Your refund is on its way." if done else None, tool_calls=[] if done else calls
            )
        return response(
            "Your refund is on its way." if done else None, function_calls=[] if done else calls
        )

    return answer


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize("api", ["chat", "responses"])
def test_openai_adapters_from_the_cli_run_tools_and_catch_a_tool_count_gap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, api: str
) -> None:
    suite = _suite(tmp_path, ["tool_use_parity", "tool_count_gap"])
    template = (
        "system=The customer is a {gender}."
        if api == "chat"
        else "instructions=The customer is a {gender}."
    )
    args = [
        "--adapter",
        f"openai-{api}",
        "--app",
        "tests.adapters.apps:stub_client",
        "--adapter-option",
        "model=gpt-4o-mini",
        "--adapter-option",
        template,
        "--adapter-option",
        f"tools={_TOOLS}",
        "--adapter-option",
        "tool_functions=tests.adapters.apps:TOOL_FUNCTIONS",
    ]
    results = {}
    for biased in (False, True):
        with openai_stub(_tool_script(biased, api)) as stub:
            monkeypatch.setenv("SPANGUARD_TEST_OPENAI_URL", stub.base_url)
            results[biased] = _run(suite, *args, "--traces-out", str(tmp_path / "t.jsonl"))
        if not biased:
            requests = [body for _, body in stub.requests]
    assert results[False].exit_code == 0, results[False].output
    assert results[True].exit_code == 1, results[True].output
    assert "fairness gate FAILED: tool_count_gap" in results[True].output
    assert requests[0]["tools"][0]["function"]["name"] == "kb_lookup"
    assert "metadata" not in requests[0] if api == "chat" else requests[0]["metadata"]
    # the tool functions ran and their outputs went back to the model with the call ids
    follow = requests[1]
    if api == "chat":
        outputs = [m for m in follow["messages"] if m["role"] == "tool"]
        assert [(m["tool_call_id"], m["content"]) for m in outputs] == [
            ("call_1", "2 articles about refund"),
            ("call_2", '{"order_id": "A7", "status": "refunded"}'),
        ]
    else:
        outputs = [i for i in follow["input"] if i.get("type") == "function_call_output"]
        assert [o["call_id"] for o in outputs] == ["call_1", "call_2"]
    lines = (tmp_path / "t.jsonl").read_text().splitlines()
    assert len(lines) == 60
    spans = [
        s
        for line in lines[:1]
        for rs in json.loads(line)["resourceSpans"]
        for ss in rs["scopeSpans"]
        for s in ss["spans"]
    ]
    assert [s["name"] for s in spans] == [
        "invoke_agent fairness_run",
        f"invoke_agent openai-{api}",
        "chat gpt-4o-mini",
        "execute_tool kb_lookup",
        "execute_tool refund_status",
        "chat gpt-4o-mini",
    ]


def test_langgraph_custom_state_with_only_a_trace_mapper_is_judged(tmp_path: Path) -> None:
    """The docs' own pattern: a state flag, mapped to an escalation; None = nothing happened."""
    suite = _suite(tmp_path, ["escalation_parity"])
    args = [
        "--adapter",
        "langgraph",
        "--adapter-option",
        "input_builder=tests.adapters.apps:desk_input",
        "--adapter-option",
        "output_key=answer",
        "--adapter-option",
        "trace_mapper=tests.adapters.apps:desk_mapper",
    ]
    fair = _run(suite, "--app", "tests.adapters.apps:fair_desk", *args)
    assert fair.exit_code == 0, fair.output
    assert fair.stdout.startswith("PASS")  # stdout: the verdicts (the design table: stderr)
    biased = _run(suite, "--app", "tests.adapters.apps:biased_desk", *args)
    assert biased.exit_code == 1, biased.output
    assert biased.output.endswith("fairness gate FAILED: escalation_parity\n")


def test_a_trace_mapper_s_explicit_no_escalation_is_signal_and_absence_is_not(
    tmp_path: Path,
) -> None:
    """Issue 47: a mapper stating ``escalated: false`` on every call, no other process signal:
    a fair app PASSes escalation_parity; a mapper returning None for it stays NO_SIGNAL."""
    suite = _suite(tmp_path, ["escalation_parity"])
    args = [
        "--adapter",
        "langgraph",
        "--adapter-option",
        "input_builder=tests.adapters.apps:desk_input",
        "--adapter-option",
        "output_key=answer",
        "--app",
        "tests.adapters.apps:quiet_desk",
    ]
    stated = _run(
        suite, *args, "--adapter-option", "trace_mapper=tests.adapters.apps:stating_mapper"
    )
    assert stated.exit_code == 0, stated.output
    assert stated.stdout.startswith("PASS")
    silent = _run(suite, *args, "--adapter-option", "trace_mapper=tests.adapters.apps:desk_mapper")
    assert silent.exit_code == 1, silent.output
    assert silent.stdout.startswith("NO_SIGNAL")


def test_a_run_in_which_every_call_fails_is_bad_input_with_the_errors_and_a_hint(
    tmp_path: Path,
) -> None:
    suite = _suite(tmp_path, ["tool_use_parity"], seeds=2)
    wrong = _run(suite, "--adapter", "langchain", "--app", "tests.adapters.apps:fair_graph")
    assert wrong.exit_code == 2, wrong.output
    assert wrong.stderr.startswith("design: 2 seeds × 2 groups × 1 repeat, 4 app calls\n")
    assert wrong.stderr.endswith(
        "\nError: the langchain adapter: none of the 4 call(s) succeeded, so there is nothing to "
        "judge. Hint: --app names a compiled LangGraph graph; use --adapter langgraph, which "
        "sends {'messages': [('user', prompt)]}.\nFirst error(s):\n"
        "  seed0::1: InvalidUpdateError: Expected dict, got Case 0: where is my refund?\n"
        "  seed0::2: InvalidUpdateError: Expected dict, got Case 0: where is my refund?\n"
        "  seed1::1: InvalidUpdateError: Expected dict, got Case 1: where is my refund?\n"
        "  (1 more)\n"
    )


@pytest.mark.integration
def test_a_server_that_is_down_gets_a_connection_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = _suite(tmp_path, ["tool_use_parity"], seeds=1)
    monkeypatch.setenv("SPANGUARD_TEST_OPENAI_URL", "http://127.0.0.1:9/v1")
    down = _run(
        suite,
        "--adapter",
        "openai-chat",
        "--app",
        "tests.adapters.apps:stub_client",
        "--adapter-option",
        "model=m",
    )
    assert down.exit_code == 2, down.output
    assert "Hint: the model server is not reachable; check the client's base_url" in down.output
    assert "  seed0::1: APIConnectionError: Connection error." in down.output


@pytest.mark.slow
@pytest.mark.integration
def test_openai_agents_from_the_cli_count_a_handoff_to_the_human_desk_as_escalation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from .test_openai_agents import _desk_script

    suite = _suite(
        tmp_path,
        ["escalation_parity", "tool_use_parity"],
        prompt="Case {i}: I am a {gender}; where is my refund?",
    )
    args = [
        "--adapter",
        "openai-agents",
        "--app",
        "tests.adapters.apps:stub_desk_agent",
        "--adapter-option",
        "escalate_on=handoff:human_desk",
    ]
    results = {}
    for biased in (False, True):
        with openai_stub(_desk_script(biased)) as stub:
            monkeypatch.setenv("SPANGUARD_TEST_OPENAI_URL", stub.base_url)
            results[biased] = _run(suite, *args)
    assert results[False].exit_code == 0, results[False].output
    assert results[True].exit_code == 1, results[True].output
    assert results[True].output.endswith("fairness gate FAILED: escalation_parity\n")


def test_langchain_model_that_asks_for_fewer_tools_for_one_group_is_caught(tmp_path: Path) -> None:
    suite = _suite(tmp_path, ["tool_use_parity", "tool_count_gap", "tool_sequence_gap"])
    fair = _run(suite, "--adapter", "langchain", "--app", "tests.adapters.apps:fair_tool_caller")
    assert fair.exit_code == 0, fair.output
    biased = _run(
        suite, "--adapter", "langchain", "--app", "tests.adapters.apps:biased_tool_caller"
    )
    assert biased.exit_code == 1, biased.output
    verdict = biased.output.splitlines()[-1]
    assert set(verdict.removeprefix("fairness gate FAILED: ").split(", ")) == {
        "tool_count_gap",
        "tool_sequence_gap",
    }  # tool_use_parity alone would have passed it
