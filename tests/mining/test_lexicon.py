"""Lexicons: the shipped data files and ``--lexicon`` extensions."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from spanguard_processor.cli import cli
from spanguard_processor.mining.lexicon import builtin_lexicon, load_lexicon
from spanguard_processor.mining.swap import LexiconSwapper

from .traffic import record


def test_the_shipped_lexicons_state_origin_and_licence() -> None:
    folder = Path(__file__).resolve().parents[2] / (
        "collector_processor/src/spanguard_processor/mining/lexicons"
    )
    files = sorted(folder.glob("*.yaml"))
    assert len(files) == 7
    for path in files:
        head = path.read_text(encoding="utf-8").split("\nattribute:")[0]
        assert "Origin:" in head and ("Licence" in head or "licence" in head), path.name
    assert builtin_lexicon().names == (
        "gender",
        "age",
        "ethnicity",
        "nationality",
        "religion",
        "disability",
    )


def test_an_extension_adds_words_to_an_attribute(tmp_path: Path) -> None:
    extra = tmp_path / "royal.yaml"
    extra.write_text(
        "attribute: gender\nkind: forms\nvalues: [female, male]\n"
        "forms:\n  - {female: queen, male: king}\n",
        encoding="utf-8",
    )
    text = "The queen wants to open an account"
    assert LexiconSwapper(builtin_lexicon()).detect(text).mentions == ()
    swapper = LexiconSwapper(load_lexicon([extra]))
    found = swapper.detect(text)
    assert [(m.attribute, m.value) for m in found.mentions] == [("gender", "female")]
    assert (
        swapper.render(text, found.mentions, {"gender": "male"})
        == "The king wants to open an account"
    )


@pytest.mark.parametrize(
    ("body", "where"),
    [
        (
            "attribute: gender\nkind: forms\nvalues: [female, male]\nforms:\n  - {female: queen}\n",
            "royal.yaml:5: field 'forms[0].male': is missing",
        ),
        (
            "attribute: gender\nkind: form\nvalues: [female, male]\n",
            "royal.yaml:2: field 'kind': must be one of forms, terms, numeric",
        ),
        (
            "attribute: gender\nkind: forms\nvalues: [female, nonbinary]\nforms:\n"
            "  - {female: queen, nonbinary: monarch}\n",
            "royal.yaml:3: field 'values': attribute 'gender' already exists",
        ),
        (
            "attribute: age\nkind: numeric\nvalues: ['30', '60']\npatterns: ['aged {x}']\n",
            "royal.yaml:4: field 'patterns[0]': must hold exactly one {n} or {decade}",
        ),
        ("attribute: [x\n", "royal.yaml:2: is not valid YAML"),
        (
            "attribute: years\nkind: numeric\nvalues: [young, old]\npatterns: ['aged {n}']\n",
            "royal.yaml:3: field 'values[0]': must be a whole number (a numeric attribute's "
            "values are ages), got 'young'",
        ),
        (
            "attribute: gender\nkind: form\nvalues: [female, male]\n",
            "field 'kind': must be one of forms, terms, numeric, got 'form'",
        ),
    ],
)
def test_a_bad_lexicon_exits_2_naming_file_line_and_field(
    tmp_path: Path, body: str, where: str
) -> None:
    spans = record(["My wife, aged 30, wants to open an account?"] * 3, tmp_path)
    extra = tmp_path / "royal.yaml"
    extra.write_text(body, encoding="utf-8")
    result = CliRunner().invoke(
        cli, ["suite", "mine", str(spans), "-o", str(tmp_path / "m.yaml"), "--lexicon", str(extra)]
    )
    assert result.exit_code == 2, result.output
    assert where in result.output.replace(str(tmp_path) + "/", "")
    assert "Traceback" not in result.output
