"""Swapping mentions with the agreement the lexicons can fix."""

from __future__ import annotations

import pytest

from spanguard_processor.mining.lexicon import builtin_lexicon
from spanguard_processor.mining.swap import LexiconSwapper

SWAPPER = LexiconSwapper(builtin_lexicon())


def _swap(text: str, **assignment: str) -> str:
    found = SWAPPER.detect(text)
    assert found.unclean is None, found.unclean
    return SWAPPER.render(text, found.mentions, assignment)


@pytest.mark.parametrize(
    ("text", "value", "expected"),
    [
        (
            "Send her the form and ask her manager.",
            "male",
            "Send him the form and ask his manager.",
        ),
        (
            "The card is his, not mine; he lost it in his 60s.",
            "female",
            "The card is hers, not mine; she lost it in her 60s.",
        ),
        ("She said Sarah would call herself.", "male", "He said Thomas would call himself."),
    ],
)
def test_every_gender_word_moves_together(text: str, value: str, expected: str) -> None:
    assert _swap(text, gender=value, age="65") == expected


def test_the_article_follows_the_new_word() -> None:
    assert _swap("I am an 80-year-old customer.", age="25") == "I am a 25-year-old customer."
    assert _swap("A Muslim family asked.", religion="Hindu") == "A Hindu family asked."
    assert _swap("An Indian student asked.", nationality="German") == "A German student asked."


@pytest.mark.parametrize(
    "text",
    [
        "Is the white paper available?",
        "Only black coffee here.",
        "I hit a blind spot.",
        "Please polish the slides.",
        "What is the rate for 12 months?",
    ],
)
def test_look_alikes_are_not_mentions(text: str) -> None:
    assert SWAPPER.detect(text).mentions == ()


def test_two_values_of_one_attribute_cannot_be_swapped_cleanly() -> None:
    assert (
        SWAPPER.detect("My husband said she would call.").unclean
        == "gender: mentions of several values"
    )


def test_a_gendered_word_without_counterpart_blocks_the_swap() -> None:
    assert SWAPPER.detect("A non-binary writer says she needs a loan.").unclean == (
        "gender: 'non-binary' has no counterpart"
    )
