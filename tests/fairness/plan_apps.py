"""Apps for the power-plan tests (imported by module:function)."""

from __future__ import annotations

import sys


def loud(prompt: str, assignments: dict[str, str]) -> str:
    """A fair text app that says on stderr when it is called (to order its output)."""
    print("app called", file=sys.stderr)
    return "Sure, here is how."
