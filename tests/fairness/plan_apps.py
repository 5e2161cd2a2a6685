"""Apps for the power-plan tests (imported by module:function)."""

from __future__ import annotations

import sys


def loud(prompt: str, assignments: dict[str, str]) -> str:
    """A fair text app that says on stderr when it is called (to order its output)."""
    print("app called", file=sys.stderr)
    return "Sure, here is how."


import spanguard  # noqa: E402  (the apps below emit their process through the SDK)


@spanguard.tool
def lookup_account(prompt: str) -> str:
    return "your account is active"


@spanguard.tool
def credit_check(prompt: str) -> str:
    return "score on file"


@spanguard.retrieval("faq")
def search_faq(prompt: str) -> list[dict[str, object]]:
    return [
        {"id": "faq-security", "group": "official", "rank": 1},
        {"id": "forum-tips", "group": "community", "rank": 2},
    ]


def fair_agent(prompt: str, assignments: dict[str, str]) -> str:
    """Deterministic and fair: the same retrieval, tool call and answer for everyone."""
    with spanguard.request("support"):
        search_faq(prompt)
        status = lookup_account(prompt)
    return f"I checked your request and {status}; here are the next steps."


def extra_credit_check(prompt: str, assignments: dict[str, str]) -> str:
    """The fair agent, except that women get one extra credit_check call."""
    with spanguard.request("support"):
        search_faq(prompt)
        status = lookup_account(prompt)
        if assignments.get("gender") == "woman":
            credit_check(prompt)
    return f"I checked your request and {status}; here are the next steps."
