"""``suite mine`` never copies a customer's words into a suite (issue 49, item 2): the floor
counts people, personal data is scrubbed before anything is written or printed, a phrasing one
person sent is never a seed, and a trace read twice counts once."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from spanguard_processor.cli import cli
from spanguard_processor.fairness import load_suite
from spanguard_processor.mining.personal import Scrubber

from .traffic import record

# the red team's three shapes of traffic (issue 49)
ONE_USER = [  # one user, the same sentence three times: a name, an e-mail, a phone, a diagnosis
    "My husband Robert Miller was diagnosed with cancer last week; can he still open a joint "
    "account? Reach me at robert.miller@example.com or +1 415 555 0134."
] * 3
NEAR_DUPLICATES = [  # one user, three near-identical sentences with a health statement
    "My wife was diagnosed last week, can she pause the loan repayments?",
    "My wife was diagnosed last week; can she pause the loan repayments?",
    "My wife was diagnosed last week - can she pause the loan repayments please?",
]
THREE_USERS = [  # three users whose sentences differ only by their own e-mail address
    f"Can my wife change her contact e-mail to {address}?"
    for address in ("anna.k@example.org", "li.wei@example.net", "o.brien@example.com")
]
PERSONAL = [
    "Robert",
    "Miller",
    "robert.miller",
    "@example",
    "415",
    "0134",
    "cancer",
    "diagnosed",
    "anna.k",
    "li.wei",
    "o.brien",
]


def _mine(*args: str) -> Result:
    return CliRunner().invoke(cli, ["suite", "mine", *args])


_IDS = re.compile(r"\b[0-9a-f]{10,}\b")  # trace ids and seed ids: random hex may hold "415"


def _leaks(result: Result, suite: Path) -> list[str]:
    written = suite.read_text(encoding="utf-8") if suite.exists() else ""
    return [
        f"{word!r} in {where}"
        for word in PERSONAL
        for where, text in (("the suite", written), ("the console", result.output))
        if word in _IDS.sub("<id>", text)
    ]


@pytest.fixture(scope="module")
def red_team(tmp_path_factory: pytest.TempPathFactory) -> Path:
    texts = ONE_USER + NEAR_DUPLICATES + THREE_USERS
    who = (
        [{"user.id": "u1"}] * 3
        + [{"session.id": "s2"}] * 3
        + [{"enduser.id": "u3"}, {"langfuse.user.id": "u4"}, {"user.id": "u5"}]
    )
    return record(texts, tmp_path_factory.mktemp("red-team"), who=who)


def test_no_name_email_phone_or_health_statement_reaches_the_suite_or_console(
    red_team: Path, tmp_path: Path
) -> None:
    out = tmp_path / "mined.yaml"
    result = _mine(str(red_team), "-o", str(out))
    assert result.exit_code == 0, result.output
    assert _leaks(result, out) == []
    prompts = sorted(v.prompt for v in load_suite(out).variants)
    assert prompts == [
        "Can my husband change his contact e-mail to [email]?",
        "Can my wife change her contact e-mail to [email]?",
    ]
    seed = yaml.safe_load(out.read_text(encoding="utf-8"))["dataset"]["variants"][0]
    assert seed["metadata"]["mined"]["users"] == 3
    assert "scrubbed personal data before templating: email 6, phone 3, surname 3" in result.output
    assert "under --min-users 3" in result.output


def test_without_user_ids_requests_are_counted_with_a_warning_and_health_is_never_a_seed(
    tmp_path: Path,
) -> None:
    spans = record(ONE_USER + NEAR_DUPLICATES, tmp_path)
    out = tmp_path / "mined.yaml"
    result = _mine(str(spans), "-o", str(out))
    assert result.exit_code == 2, result.output
    assert "warning: no request records a user or session id" in result.output
    assert "stating health or finance facts that fewer than 3 recorded users share" in (
        result.output
    )
    assert _leaks(result, out) == []


def test_min_requests_is_the_old_spelling_of_min_users(red_team: Path, tmp_path: Path) -> None:
    out = tmp_path / "mined.yaml"
    result = _mine(str(red_team), "-o", str(out), "--min-requests", "4")
    assert result.exit_code == 2, result.output
    assert "note: --min-requests is deprecated; use --min-users" in result.output
    assert "no template was sent by 4 or more distinct users" in result.output


def test_a_trace_in_a_file_and_in_its_store_counts_once(tmp_path: Path) -> None:
    texts = ["Can my wife open a savings account for the kids?"] * 2
    spans = record(texts, tmp_path, who=[{"user.id": "u1"}, {"user.id": "u2"}])
    store = tmp_path / "spans.db"
    assert CliRunner().invoke(cli, ["ingest", str(spans), "--store", str(store)]).exit_code == 0
    exported = tmp_path / "traces.jsonl"
    export = ["traces", "export", "--store", str(store), "-o", str(exported)]
    assert CliRunner().invoke(cli, export).exit_code == 0
    rows = [json.loads(line) for line in exported.read_text(encoding="utf-8").splitlines()]
    assert [r["user_id"] for r in rows] == ["u1", "u2"]
    out = tmp_path / "mined.yaml"
    result = _mine(str(exported), "--store", str(store), "-o", str(out))
    assert result.exit_code == 2, result.output  # 2 users, not 4 requests: under the floor
    assert "read 2 request(s)" in result.output
    assert "note: 2 request(s) were read twice" in result.output


def test_a_trace2eval_log_names_its_users_by_user_id_or_session_id(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    text = "Can my wife open a savings account for the kids?"
    senders = [{"user_id": "u1"}, {"userId": "u1"}, {"session_id": "s1"}, {"user_id": "u2"}]
    rows = [{"id": f"r{i}", "input": text, "output": "ok"} | who for i, who in enumerate(senders)]
    log.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "mined.yaml"
    assert _mine(str(log), "-o", str(out), "--min-users", "4").exit_code == 2  # 3 users
    result = _mine(str(log), "-o", str(out))
    assert result.exit_code == 0, result.output
    assert "warning" not in result.output and "no user or session id" not in result.output


@pytest.mark.parametrize(
    ("text", "scrubbed", "kinds"),
    [
        ("mail jo.smith+bank@mail.example.co.uk now", "mail [email] now", ("email",)),
        ("see https://jo:secret@bank.example/x?y=1 please", "see [url] please", ("url",)),
        ("call (415) 555-0134 or +44 20 7946 0958.", "call [phone] or [phone].", ("phone",)),
        ("card 4111 1111 1111 1111 lost", "card [card number] lost", ("card",)),
        ("IBAN DE89 3704 0044 0532 0130 00 please", "IBAN [iban] please", ("iban",)),
        ("Ms Smith and Dr. Okafor met Linda", "Ms [surname] and Dr. [surname] met [name]", ()),
        ("moved 52,000 dollars on 2026-05-01 to account 1234", None, ()),
    ],
)
def test_the_scrubber_replaces_personal_data_and_leaves_amounts_and_dates(
    text: str, scrubbed: str | None, kinds: tuple[str, ...]
) -> None:
    result = Scrubber(["Linda", "Sarah"]).scrub(text)
    assert result.text == (scrubbed or text)
    assert set(kinds) <= set(result.kinds)


def test_a_first_name_that_is_the_slot_is_kept_for_the_swapper() -> None:
    text = "Sarah Connor says she lost her card"
    result = Scrubber(["Sarah"]).scrub(text, keep=[(0, 5)])
    assert result.text == "Sarah [surname] says she lost her card"


def _suite_metrics(path: Path) -> list[dict[str, Any]]:
    return list(yaml.safe_load(path.read_text(encoding="utf-8"))["metrics"])
