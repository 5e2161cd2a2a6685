"""Importers, on files written in each tool's documented native format."""

from __future__ import annotations

import json
from pathlib import Path
from textwrap import dedent

import pytest
import yaml
from click.testing import CliRunner

from spanguard.exceptions import InputError
from spanguard_processor.cli import cli
from spanguard_processor.fairness.design.suite import load_suite
from spanguard_processor.importers import import_suite, load_deepeval, load_promptfoo

PROMPTFOO_CONFIG = dedent("""\
    description: Refund assistant, counterfactual by gender and region
    prompts:
      - 'A {{ gender }} customer from {{region}} asks: {{question}}'
    providers:
      - openai:gpt-4o-mini
    defaultTest:
      vars:
        region: EU
    tests:
      - description: refund-window
        vars:
          question: How long do refunds take?
          gender: [man, woman]
        assert:
          - type: contains
            value: days
      - vars:
          question: Can I return a gift?
          gender: [man, woman]
          region: [EU, US]
        metadata:
          seed_id: gift
    """)


def test_promptfoo_config_renders_prompts_and_expands_list_vars(tmp_path: Path) -> None:
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(PROMPTFOO_CONFIG)
    variants = load_promptfoo(path)
    assert [(v.id, v.seed_id, dict(v.assignments)) for v in variants] == [
        # region is list-valued in one test, so it is an attribute of the whole suite
        ("refund-window::1", "seed-1", {"gender": "man", "region": "EU"}),
        ("refund-window::2", "seed-1", {"gender": "woman", "region": "EU"}),
        # the product runs over the vars in order: region (from defaultTest) first
        ("test-3::1", "gift", {"gender": "man", "region": "EU"}),
        ("test-3::2", "gift", {"gender": "woman", "region": "EU"}),
        ("test-3::3", "gift", {"gender": "man", "region": "US"}),
        ("test-3::4", "gift", {"gender": "woman", "region": "US"}),
    ]
    assert variants[1].prompt == "A woman customer from EU asks: How long do refunds take?"


def test_promptfoo_test_file_with_prompt_var_and_attributes(tmp_path: Path) -> None:
    path = tmp_path / "tests.json"
    path.write_text(
        json.dumps(
            [
                {
                    "description": "q1-m",
                    "vars": {
                        "query": "A man asks for a refund.",
                        "gender": "man",
                        "topic": "refund",
                    },
                },
                {
                    "description": "q1-w",
                    "vars": {
                        "query": "A woman asks for a refund.",
                        "gender": "woman",
                        "topic": "refund",
                    },
                },
                {
                    "description": "q2-m",
                    "vars": {"query": "A man asks about fees.", "gender": "man", "topic": "fees"},
                },
            ]
        )
    )
    variants = load_promptfoo(path, prompt_var="query", attributes=["gender"])
    assert [(v.id, v.seed_id, v.prompt, dict(v.assignments)) for v in variants] == [
        ("q1-m", "seed-1", "A man asks for a refund.", {"gender": "man"}),
        ("q1-w", "seed-1", "A woman asks for a refund.", {"gender": "woman"}),
        ("q2-m", "seed-2", "A man asks about fees.", {"gender": "man"}),
    ]


def test_promptfoo_config_with_csv_tests_file(tmp_path: Path) -> None:
    (tmp_path / "tests.csv").write_text(
        "question,gender,__expected\nRefund?,man,contains:days\nRefund?,woman,contains:days\n"
    )
    (tmp_path / "promptfooconfig.yaml").write_text(
        "prompts: ['{{gender}}: {{question}}']\ntests: file://tests.csv\n"
    )
    variants = load_promptfoo(tmp_path / "promptfooconfig.yaml", attributes=["gender"])
    assert [(v.seed_id, v.prompt) for v in variants] == [
        ("seed-1", "man: Refund?"),
        ("seed-1", "woman: Refund?"),
    ]


def test_deepeval_goldens_keep_names_seeds_and_assignments(tmp_path: Path) -> None:
    path = tmp_path / "goldens.json"
    path.write_text(
        json.dumps(
            [
                {
                    "input": "I am a man. How do refunds work?",
                    "actual_output": None,
                    "expected_output": "Refunds take 5 days.",
                    "context": ["policy"],
                    "retrieval_context": None,
                    "additional_metadata": {"seed_id": "refund", "assignments": {"gender": "man"}},
                    "comments": None,
                    "tools_called": None,
                    "expected_tools": None,
                    "source_file": None,
                    "name": "refund-man",
                },
                {
                    "input": "I am a woman. How do refunds work?",
                    "expected_output": "Refunds take 5 days.",
                    "additional_metadata": {"seed_id": "refund", "gender": "woman"},
                    "name": "refund-woman",
                },
            ]
        )
    )
    variants = load_deepeval(path, attributes=["gender"])
    assert [(v.id, v.seed_id, dict(v.assignments)) for v in variants] == [
        ("refund-man", "refund", {"gender": "man"}),
        ("refund-woman", "refund", {"gender": "woman"}),
    ]


def test_deepeval_csv_as_save_as_writes_it(tmp_path: Path) -> None:
    path = tmp_path / "goldens.csv"
    path.write_text(
        "input,actual_output,expected_output,context,retrieval_context,source_file,"
        "additional_metadata\n"
        'Hi from a man,,Hello,,,,"{""seed_id"": ""s"", ""assignments"": {""g"": ""m""}}"\n'
        'Hi from a woman,,Hello,,,,"{""seed_id"": ""s"", ""assignments"": {""g"": ""w""}}"\n'
    )
    variants = load_deepeval(path)
    assert [(v.id, v.seed_id, dict(v.assignments)) for v in variants] == [
        ("golden-1", "s", {"g": "m"}),
        ("golden-2", "s", {"g": "w"}),
    ]


def test_fairtrace_shapes_import_like_fairtrace(tmp_path: Path) -> None:
    from fairtrace.cli import build_imported_suite

    promptfoo = tmp_path / "ft_promptfoo.json"
    promptfoo.write_text(
        json.dumps(
            {
                "tests": [
                    {"id": "a", "prompt": "P1", "vars": {"g": "m"}, "group_id": "s1"},
                    {
                        "description": "b",
                        "prompt": "P2",
                        "vars": {"g": "w"},
                        "metadata": {"group_id": "s1"},
                    },
                    {"prompt": "P3", "vars": {"g": "m"}},
                ]
            }
        )
    )
    deepeval = tmp_path / "ft_deepeval.json"
    deepeval.write_text(
        json.dumps(
            {
                "cases": [
                    {
                        "id": "c1",
                        "input": "I1",
                        "metadata": {"seed_id": "s", "assignments": {"g": "m"}},
                    },
                    {"input": "I2", "metadata": {"group_id": "s", "assignments": {"g": "w"}}},
                ]
            }
        )
    )
    for source, path in (("promptfoo", promptfoo), ("deepeval", deepeval)):
        theirs = build_imported_suite(source, path, ["tool_use_parity"])
        ours = import_suite(f"fairtrace-{source}", path, ["tool_use_parity"])
        strip = [
            {k: v[k] for k in ("id", "seed_id", "prompt", "assignments")}
            for v in theirs["dataset"]["variants"]
        ]
        assert ours["dataset"]["variants"] == strip
        assert ours["metrics"] == theirs["metrics"]


def test_import_command_writes_a_suite_that_run_loads(tmp_path: Path) -> None:
    src = tmp_path / "promptfooconfig.yaml"
    src.write_text(PROMPTFOO_CONFIG)
    out = tmp_path / "suite.yaml"
    result = CliRunner().invoke(
        cli,
        [
            "import",
            "promptfoo",
            str(src),
            str(out),
            "--metric",
            "refusal_gap",
            "--metric",
            "verbosity_gap",
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.output == f"wrote 6 variants in 2 seeds to {out}\n"
    suite = load_suite(out)
    assert [v.id for v in suite.variants][:2] == ["refund-window::1", "refund-window::2"]
    assert yaml.safe_load(out.read_text())["metrics"] == [
        {"type": "refusal_gap"},
        {"type": "verbosity_gap"},
    ]
    again = CliRunner().invoke(
        cli, ["import", "promptfoo", str(src), str(out), "--metric", "refusal_gap"]
    )
    assert again.exit_code == 2
    assert again.output == (
        f"Error: {out}: the output file already exists; choose another "
        "path or pass --force to replace it.\n"
    )


@pytest.mark.parametrize(
    ("source", "name", "content", "message"),
    [
        (
            "promptfoo",
            "t.yaml",
            "tests:\n  - vars: [1, 2]\n",
            "Error: {path}:2: field 'tests[0]': 'vars' and 'metadata' must be objects.\n",
        ),
        (
            "promptfoo",
            "t.yaml",
            "a: [1\n",
            "Error: {path}:2: the file is not valid YAML (expected ',' or ']', but got '<stream "
            "end>'); "
            "expected a promptfoo test file (a list of test cases with 'vars'), a promptfoo config "
            "with 'tests' or 'scenarios', or the results.json of 'promptfoo eval -o'.\n",
        ),
        (
            "promptfoo",
            "t.yaml",
            "providers: []\n",
            "Error: {path}: the file holds an object without 'tests' or 'scenarios'; expected a "
            "promptfoo test file (a list of test cases with 'vars'), a promptfoo config with "
            "'tests' "
            "or 'scenarios', or the results.json of 'promptfoo eval -o'.\n",
        ),
        (
            "promptfoo",
            "t.json",
            '[{"vars": {"question": "q"}}]',
            "Error: {path}: field 'vars.prompt': the test has no 'prompt' var to use as the "
            "prompt; "
            "pass --prompt-var NAME, or import a config with prompts.\n",
        ),
        (
            "promptfoo",
            "t.json",
            '[{"vars": {"prompt": "q", "g": {"x": 1}}}]',
            "Error: {path}: field 'vars.g': must be a string, number or boolean to become an "
            "assignment, not an object.\n",
        ),
        (
            "promptfoo",
            "results.json",
            '{"results": {"version": 3, "results": []}, "config": {}}',
            "Error: {path}: field 'config.tests': no counterfactual attribute found: no var is a "
            "list "
            "in config.tests and no scenario sets one; pass --attribute NAME (e.g. --attribute "
            "gender).\n",
        ),
        (
            "promptfoo",
            "t.yaml",
            "- vars:\n    prompt: q\n    g: {x: 1}\n",
            "Error: {path}:1: field 'vars.g': must be a string, number or boolean to become an "
            "assignment, not an object.\n",
        ),
        (
            "promptfoo",
            "t.json",
            '[{"vars": {"prompt": "file://p.txt"}}]',
            "Error: {path}: field 'vars.prompt': loads its value from a file, which this importer "
            "does "
            "not do; inline the text in the test.\n",
        ),
        (
            "deepeval",
            "g.json",
            '[{"scenario": "angry customer", "turns": []}]',
            "Error: {path}: field '[0]': is a multi-turn ConversationalGolden; only single-turn "
            "goldens with 'input' can become variants.\n",
        ),
        (
            "deepeval",
            "g.json",
            '{"cases": []}',
            "Error: {path}: the file holds an object; expected a DeepEval dataset as "
            "EvaluationDataset.save_as() writes it (a JSON list of goldens with 'input', or its "
            "CSV).\n",
        ),
        (
            "deepeval",
            "g.jsonl",
            '{"input": "a", "additional_metadata": {"gender": "man"}}\n',
            "Error: {path}: field 'additional_metadata': no counterfactual attribute found: no "
            "golden "
            "has additional_metadata.assignments and no --attribute was given; pass --attribute "
            "NAME "
            "for the keys that are attributes (keys found: gender).\n",
        ),
        (
            "deepeval",
            "g.json",
            '[{"input": "a", "name": "x"}, {"input": "b", "name": "x"}]',
            "Error: {path}: field 'id': the id 'x' is used twice; ids must be unique.\n",
        ),
        (
            "fairtrace-promptfoo",
            "f.json",
            '[{"prompt": "", "vars": {}}]',
            "Error: {path}: field '[0].prompt': must be a non-empty string.\n",
        ),
    ],
)
def test_import_files_in_the_wrong_format_are_bad_input(
    tmp_path: Path, source: str, name: str, content: str, message: str
) -> None:
    path = tmp_path / name
    path.write_text(content)
    result = CliRunner().invoke(
        cli, ["import", source, str(path), str(tmp_path / "out.json"), "--metric", "refusal_gap"]
    )
    assert result.exit_code == 2
    assert result.output == message.format(path=path)
    assert not (tmp_path / "out.json").exists()


def test_import_needs_a_metric_and_a_known_one(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text('[{"vars": {"prompt": "q"}}]')
    missing = CliRunner().invoke(cli, ["import", "promptfoo", str(path), str(tmp_path / "o")])
    assert missing.exit_code == 2 and "Missing option '--metric'" in missing.output
    unknown = CliRunner().invoke(
        cli, ["import", "promptfoo", str(path), str(tmp_path / "o"), "--metric", "nope_gap"]
    )
    assert unknown.exit_code == 2
    assert unknown.output.startswith(f"Error: {path}: field 'metrics[0].type'")


def test_promptfoo_config_with_yaml_tests_file_and_deepeval_wrapper(tmp_path: Path) -> None:
    (tmp_path / "cases.yaml").write_text(
        dedent("""\
        - vars:
            question: Refund?
            tone: [formal, casual]
          metadata:
            id: refund
        """)
    )
    (tmp_path / "promptfooconfig.yaml").write_text(
        "prompts:\n  - raw: '({{tone}}) {{question}}'\ntests:\n  - file://cases.yaml\n"
    )
    variants = load_promptfoo(tmp_path / "promptfooconfig.yaml")
    assert [(v.id, v.prompt, dict(v.assignments)) for v in variants] == [
        ("refund::1", "(formal) Refund?", {"tone": "formal"}),
        ("refund::2", "(casual) Refund?", {"tone": "casual"}),
    ]
    goldens = tmp_path / "goldens.json"
    goldens.write_text(
        json.dumps(
            {
                "goldens": [
                    {
                        "input": "Hi",
                        "name": "g1",
                        "additional_metadata": {"assignments": {"g": "a"}},
                    }
                ]
            }
        )
    )
    assert [(v.id, v.seed_id) for v in load_deepeval(goldens)] == [("g1", "g1")]


@pytest.mark.parametrize(
    ("source", "name", "content", "options", "message"),
    [
        (
            "promptfoo",
            "a.json",
            '[{"vars": {"prompt": "q", "g": "m"}}]',
            ["--attribute", "g", "--seed-var", "sid"],
            "Error: {path}: field 'vars.sid': the test has no 'sid' var (--seed-var).\n",
        ),
        (
            "deepeval",
            "b.json",
            '[{"input": "a", "additional_metadata": {"assignments": {"g": "m"}}}]',
            ["--seed-var", "sid"],
            "Error: {path}: field '[0].additional_metadata.sid': the golden has no 'sid' key "
            "(named by "
            "--seed-var).\n",
        ),
        (
            "deepeval",
            "c.json",
            '[{"input": "a", "additional_metadata": {"x": 1}}]',
            ["--attribute", "g"],
            "Error: {path}: field '[0].additional_metadata.g': the golden has no 'g' attribute "
            "(named "
            "by --attribute).\n",
        ),
        (
            "promptfoo",
            "results.json",
            '{"results": {"version": 3, "results": [{"vars": {"prompt": "q"}, "response": '
            '{"output": "x"}}]}, "config": {}}',
            ["--attribute", "g"],
            "Error: {path}: field 'results.results[0].vars.g': the row has no 'g' var "
            "(--attribute).\n",
        ),
        (
            "promptfoo",
            "promptfooconfig.yaml",
            'prompts:\n  - "{% if x %}hi{% endif %}"\ntests:\n  - vars: {x: "1", g: [m, w]}\n',
            [],
            "Error: {path}: field 'prompts': uses Nunjucks beyond plain {{{{ var }}}} "
            "substitutions; "
            "pass --prompt-var instead.\n",
        ),
    ],
)
def test_messages_name_the_option_the_user_typed(
    tmp_path: Path, source: str, name: str, content: str, options: list[str], message: str
) -> None:
    """The importers name their parameters (`seed_var`); the command spells them --seed-var."""
    path = tmp_path / name
    path.write_text(content)
    result = CliRunner().invoke(
        cli,
        [
            "import",
            source,
            str(path),
            str(tmp_path / "out.json"),
            "--metric",
            "refusal_gap",
            *options,
        ],
    )
    assert result.exit_code == 2
    assert result.output == message.format(path=path)


def test_the_library_error_names_the_parameter(tmp_path: Path) -> None:
    from spanguard_processor.importers import write_suite

    out = tmp_path / "suite.json"
    out.write_text("{}")
    with pytest.raises(InputError, match="pass `force` to replace it"):
        write_suite(out, {}, force=False)
