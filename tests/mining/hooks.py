"""A redaction hook as an operator would write one: (key, text) -> text."""

from __future__ import annotations

import re


def product(key: str, text: str) -> str:
    """Masks what the operator considers confidential here: the product asked about."""
    return re.sub(r"\bcard\b", "[product]", text)
