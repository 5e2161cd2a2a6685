"""A small retrieval-augmented (RAG) app instrumented with spanguard.

``answer(prompt, assignments)`` is the entry point ``spanguard run`` calls. The app ranks a
tiny in-memory corpus of pages from two source groups — ``vendor`` (the product's own docs)
and ``forum`` (community posts) — by word overlap with the question, records the ranked
documents on a ``@spanguard.retrieval`` span (id, group, rank, score), and answers from the
top page. No model is called: it is deterministic, so the same prompt and assignments give the
same spans.

Bias switch, for showing the gate at work: with ``RAG_APP_BIAS=1`` in the environment a request
whose assignments contain ``RAG_APP_BIAS_AGAINST`` (default ``"Spanish"``) is shown the forum
posts ahead of the vendor docs — exactly the unequal exposure ``retrieval_exposure_gap``
measures. Default: fair.

Run it::

    spanguard run examples/rag_suite.yaml --app examples.rag_app:answer -o rag-report
    RAG_APP_BIAS=1 spanguard run examples/rag_suite.yaml --app examples.rag_app:answer

(from the repository root; the first exits 0, the second 1).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

import spanguard

__all__ = ["BIAS_AGAINST_ENV", "BIAS_ENV", "CORPUS", "Page", "answer", "search"]

BIAS_ENV = "RAG_APP_BIAS"
BIAS_AGAINST_ENV = "RAG_APP_BIAS_AGAINST"
TOP_K = 3


@dataclass(frozen=True)
class Page:
    """One document of the corpus: ``source`` is its group for the fairness metrics."""

    id: str
    source: str
    text: str


CORPUS: tuple[Page, ...] = (
    Page("vendor-billing", "vendor", "To change your billing plan open Settings, Billing, Plan."),
    Page("vendor-export", "vendor", "Export your data as CSV from Settings, Data, Export."),
    Page("vendor-password", "vendor", "Reset a password with the Forgot password link."),
    Page("vendor-invoice", "vendor", "Invoices are emailed on the first day of each month."),
    Page("forum-billing", "forum", "I changed my billing plan by emailing support, took a week."),
    Page("forum-export", "forum", "Export to CSV never worked for me, I copy the data by hand."),
    Page("forum-password", "forum", "Password reset emails land in spam, check there."),
    Page("forum-invoice", "forum", "My invoice came late, anyone else?"),
)

_WORD = re.compile(r"[a-z]+")
_STOPWORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "anyone",
        "as",
        "by",
        "can",
        "do",
        "else",
        "for",
        "from",
        "how",
        "i",
        "in",
        "is",
        "it",
        "me",
        "my",
        "of",
        "on",
        "the",
        "there",
        "to",
        "took",
        "was",
        "what",
        "when",
        "where",
        "with",
        "you",
        "your",
    }
)


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower())) - _STOPWORDS


def _forum_first(assignments: Mapping[str, str]) -> bool:
    if os.environ.get(BIAS_ENV, "0") in ("", "0"):
        return False
    return os.environ.get(BIAS_AGAINST_ENV, "Spanish") in assignments.values()


@spanguard.retrieval(
    "help_corpus",
    mapper=lambda pages: [
        {
            "id": p.id,
            "group": p.source,
            "rank": rank,
            "score": round(1.0 / rank, 3),
            "content": p.text,
        }
        for rank, p in enumerate(pages, start=1)
    ],
)
def search(question: str, forum_first: bool = False) -> list[Page]:
    """The ``TOP_K`` pages sharing most words with ``question`` (vendor docs win ties)."""
    query = _words(question)

    def key(page: Page) -> tuple[int, bool, str]:
        vendor_last = page.source == "vendor" if forum_first else page.source != "vendor"
        return (-len(query & _words(page.text)), vendor_last, page.id)

    return sorted(CORPUS, key=key)[:TOP_K]


@spanguard.request("rag_app")
def answer(prompt: str, assignments: Mapping[str, str]) -> str:
    """Answer ``prompt`` from the best-ranked page (``assignments`` only matter when biased)."""
    with spanguard.plan():
        spanguard.plan_step("retrieve")
        pages = search(prompt, forum_first=_forum_first(assignments))
        spanguard.plan_step("answer")
        with spanguard.llm_call("rag-extractive-1", provider="example") as call:
            call.record_usage(input_tokens=len(prompt) // 4 + 40, output_tokens=20)
            reply = f"{pages[0].text} (source: {pages[0].id})"
            call.set_output(reply)
    request = spanguard.current_request()
    if request is not None:
        request.set_metadata("helpfulness_score", 0.9 if pages[0].source == "vendor" else 0.5)
    return reply


if __name__ == "__main__":
    spanguard.configure(exporter="console", service_name="rag-app")
    print(answer("How do I export my data to CSV?", {"language": "English"}))
    spanguard.shutdown()
