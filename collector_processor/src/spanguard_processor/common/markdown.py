"""App text made inert: in a Markdown report, on the console.

Trace content (prompts, answers, plan steps, escalation reasons, tool and document names) is
written by the app, so by whoever talks to the app. In a Markdown report (a CI step summary, a
pull-request comment) it must not become a link, an image, HTML or a heading; on a terminal it
must not move the cursor, recolour the screen or rewrite the title (ANSI escapes).

:func:`md_text` escapes every character Markdown gives a meaning (``\\ ` * _ [ ] ( ) ! < > # |
~ &``) and folds the text onto one line (a table cell); :func:`console_text` removes ANSI
escape sequences and shows every other control character as a visible ``\\xNN``.
"""

from __future__ import annotations

import re

__all__ = ["console_text", "md_inert", "md_text"]

_MD_SPECIAL = re.compile(r"([\\`*_\[\]()!#|~{}<>&])")
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def md_text(text: str) -> str:
    """``text`` as inert Markdown on one line: no link, image, HTML, heading or emphasis."""
    text = _MD_SPECIAL.sub(r"\\\1", str(text))  # "<" too: a backslash, never an entity
    return text.replace("\r\n", " ").replace("\r", " ").replace("\n", " ")


def md_inert(text: str) -> str:
    """The least escaping that still makes ``text`` inert in a Markdown table cell — no link,
    image or HTML: ``\\`` and ``|`` escaped, ``](`` broken (a link or image needs it), ``<``
    escaped (no tag can open; never an HTML entity, which a raw report or a terminal shows as
    ``&lt;``), one line — for reports whose other characters stay as another tool
    writes them (trace2eval's report.md) or as their tests read them."""
    text = str(text).replace("\\", "\\\\").replace("|", "\\|").replace("](", "\\](")
    text = text.replace("<", "\\<")
    return text.replace("\r\n", " ").replace("\r", " ").replace("\n", " ")


def console_text(text: str) -> str:
    """``text`` safe to print on a terminal: ANSI escapes removed, other control characters
    (but newline and tab) shown as ``\\xNN``."""
    text = _ANSI.sub("", str(text))
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
