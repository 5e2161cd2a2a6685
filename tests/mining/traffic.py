"""Production traffic from hidden templates, recorded as real spans by the SDK.

The generator has its own word lists (not the miner's lexicons): each hidden template is a
phrasing with gender (or age, religion, nationality, ethnicity, disability) slots, filled
per request with one consistent value, plus numbers that change from request to request.
Mention-free traffic (including look-alikes: "white paper", "black coffee", "a blind spot") is
mixed in.
"""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

GENDER = {  # slot → (female, male)
    "wife": ("wife", "husband"),
    "she": ("she", "he"),
    "She": ("She", "He"),
    "her_obj": ("her", "him"),
    "her_pos": ("her", "his"),
    "woman": ("woman", "man"),
    "mother": ("mother", "father"),
    "daughter": ("daughter", "son"),
    "sister": ("sister", "brother"),
    "Ms": ("Ms", "Mr"),
    "name": ("Sarah", "Thomas"),
}
PREFIXES = [
    "My {wife} wants to know whether {she} can",
    "Can {she} still",
    "I am a {woman} and I would like to",
    "{She} asked me to find out how to",
    "My {mother} is asking if {she} is allowed to",
    "Our {daughter} needs help; can {she}",
    "{Ms} Smith would like {her_obj} account manager to help {her_obj}",
    "My {sister} lost {her_pos} card and now wants to",
    "{name} called because {she} wants to",
]
TASKS = [
    "refinance the mortgage on the lake house for {n} dollars",
    "open a joint savings account online today",
    "dispute a late fee charged on the statement from March",
    "raise the credit limit on the travel card to {n}",
    "close the old checking account and move the balance",
    "get a replacement debit card mailed overseas",
    "set up automatic payments for the car loan",
    "apply for a small business loan of {n} euros",
    "change the mailing address on file after moving",
    "report a suspicious transfer of {n} pounds yesterday",
    "add a beneficiary to the retirement plan",
    "unlock online banking after three failed logins",
    "request a paper copy of last year's tax form",
    "stop a cheque that was written by mistake",
    "increase the daily ATM withdrawal limit",
    "switch the savings account to a higher interest tier",
    "find out why the mobile deposit was rejected",
    "get a letter confirming the account balance for a visa",
    "pause the student loan repayments for {n} months",
    "enrol in overdraft protection for the main account",
    "order foreign currency for a trip to Japan",
    "cancel the annual fee on the platinum card",
    "consolidate two credit card balances into one loan",
    "book an appointment with a mortgage adviser next week",
    "dispute a duplicate charge from an online store",
    "transfer {n} dollars from the brokerage account",
    "remove an old phone number from the profile",
    "get the fraud alert lifted from the credit file",
    "open a custodial account for a newborn",
    "reset the PIN of the business credit card",
    "ask why the home equity application was declined",
    "convert the fixed deposit before it matures",
    "set a travel notice for a month in Canada",
    "receive statements by email instead of post",
]
OTHER = [  # (attribute, template with {v}, values)
    (
        "age",
        "I am a {v}-year-old customer and want to know about the pension top-up options",
        ("31", "44", "58", "72"),
    ),
    (
        "age",
        "Is a reverse mortgage possible if the borrower is aged {v} and owns the home?",
        ("62", "70", "77"),
    ),
    (
        "age",
        "Someone in my {v}s asked whether a credit card without annual fee exists",
        ("20", "40", "60"),
    ),
    (
        "religion",
        "As a {v} customer, is there a savings product without interest?",
        ("Muslim", "Christian", "Jewish"),
    ),
    (
        "religion",
        "Our {v} charity needs a donations account with low fees",
        ("Hindu", "Sikh", "Buddhist"),
    ),
    (
        "nationality",
        "Can a {v} citizen living abroad open a checking account remotely?",
        ("Mexican", "German", "Nigerian"),
    ),
    (
        "ethnicity",
        "Our {v} customer asked whether the branch offers evening appointments",
        ("Black", "Asian", "Hispanic"),
    ),
    (
        "disability",
        "I am {v} and need my statements in an accessible format",
        ("blind", "deaf", "autistic"),
    ),
]
FREE = [
    "What are your opening hours on {n} December?",
    "Is the white paper on savings rates available as a PDF?",
    "The coffee machine in the branch only makes black coffee, is tea available?",
    "I hit a blind spot in the app when exporting {n} transactions",
    "How do I polish the presentation of my budget in the app?",
    "What is the interest rate on the {n}-month certificate of deposit?",
    "Why does the app log me out after {n} minutes?",
    "Where can I download the statement for account {n}?",
    "How long does an international wire take to arrive?",
    "Can you explain the difference between the two premium plans?",
]


@dataclass(frozen=True)
class Hidden:
    template: str  # the expected seed template ("{gender}" where each mention is)
    attribute: str


def _fill(text: str, slots: dict[str, str], n: int) -> str:
    return text.format(n=n, **slots)


def hidden_templates(gender_only: bool = False) -> list[tuple[Hidden, object]]:
    """(expected template, how to render one request) for every hidden template."""
    out: list[tuple[Hidden, object]] = []
    for i, task in enumerate(TASKS):
        phrase = PREFIXES[i % len(PREFIXES)] + " " + task + "?"
        expected = phrase.format(n="{n}", **{k: "{gender}" for k in GENDER})
        # a surname after a title is personal data: the miner scrubs it
        expected = expected.replace("} Smith ", "} [surname] ")
        out.append((Hidden(expected, "gender"), ("gender", phrase)))
    if not gender_only:
        for attribute, text, values in OTHER:
            out.append(
                (
                    Hidden(text.replace("{v}", "{" + attribute + "}"), attribute),
                    (attribute, text, values),
                )
            )
    return out


def requests(
    count: int,
    seed: int = 7,
    free_share: float = 0.4,
    gender_only: bool = False,
) -> list[tuple[str, str | None]]:
    """``count`` (input text, hidden template) pairs; None for mention-free requests."""
    rng = random.Random(seed)
    hidden = hidden_templates(gender_only)
    weights = [1.0 / (1 + i % 7) for i in range(len(hidden))]
    out: list[tuple[str, str | None]] = []
    for _ in range(count):
        n = rng.randint(2, 90000)
        if rng.random() < free_share:
            out.append((FREE[rng.randrange(len(FREE))].format(n=n), None))
            continue
        (expected, how) = rng.choices(hidden, weights)[0]
        if how[0] == "gender" and len(how) == 2:
            side = rng.randrange(2)
            slots = {k: v[side] for k, v in GENDER.items()}
            out.append((_fill(str(how[1]), slots, n), expected.template))
        else:
            _, text, values = how  # type: ignore[misc]
            out.append((str(text).replace("{v}", rng.choice(values)), expected.template))
    return out


_SCRIPT = """
import json, sys
from opentelemetry import trace
import spanguard
spanguard.configure(exporter="otlp-json-file", file_path=sys.argv[2], capture_content=True)

@spanguard.tool
def lookup():
    return 1

for i, line in enumerate(open(sys.argv[1], encoding="utf-8")):
    row = json.loads(line)
    with spanguard.request("bank", request_id=f"req-{i}", input=row["text"]) as req:
        for key, value in row.get("who", {}).items():
            trace.get_current_span().set_attribute(key, value)
        for _ in range(row.get("tools", 0)):
            lookup()
        if row.get("escalate"):
            spanguard.escalate(reason="review")
        req.set_output("Here is how to do that.")
spanguard.shutdown() if hasattr(spanguard, "shutdown") else None
"""


def record(
    texts: list[str],
    folder: Path,
    name: str = "spans.jsonl",
    content: bool = True,
    escalate: frozenset[int] = frozenset(),
    who: Sequence[dict[str, str]] = (),
    tools: Sequence[int] = (),
) -> Path:
    """Record one SDK request per text (in a fresh process) into an OTLP-JSON span file;
    ``who[i]`` are attributes naming request i's sender (``{"user.id": "u1"}``), ``tools[i]``
    how many tool calls it makes."""
    import json

    folder.mkdir(parents=True, exist_ok=True)
    rows = folder / f"{name}.rows"
    rows.write_text(
        "".join(
            json.dumps(
                {
                    "text": t,
                    "escalate": i in escalate,
                    "who": who[i] if i < len(who) else {},
                    "tools": tools[i] if i < len(tools) else 0,
                }
            )
            + "\n"
            for i, t in enumerate(texts)
        ),
        encoding="utf-8",
    )
    out = folder / name
    script = (
        _SCRIPT if content else _SCRIPT.replace("capture_content=True", "capture_content=False")
    )
    subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), str(rows), str(out)],
        check=True,
        capture_output=True,
        text=True,
    )
    return out
