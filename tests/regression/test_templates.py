"""Wording variants of one template are pooled into one question before the outcome split
(regression/mine/templates.py); other questions never are."""

from __future__ import annotations

from spanguard_processor.regression.mine.dedup import leader_clusters
from spanguard_processor.regression.mine.templates import template_pools, words
from spanguard_processor.regression.textnorm import shingles


def test_values_are_one_token_and_hyphenated_words_one_word() -> None:
    assert words("I'm self-employed, my income is $52,000.") == (
        "i'm",
        "self-employed",
        "my",
        "income",
        "is",
        "#",
    )


def test_wording_variants_of_a_template_share_a_pool_and_other_questions_do_not() -> None:
    texts = [
        "Hello, I am Dana Levi, a salaried customer. I earn $118,000 a year and would like "
        "to borrow $17,700 for a car.",
        "Hello, I am Fatima Zahra, a self-employed customer. I earn $88,000 a year and would "
        "like to borrow $40,000 for home repairs.",
        # the same words, but the values swapped: the slots do not line up
        "Hello, I am Dana Levi, a salaried customer. I would like to borrow $17,700 and earn "
        "$118,000 a year for a car.",
        # another question with two values
        "Can I get a $4,000 loan over 12 months? I'm retired, my income is $27,000.",
        # another question with no value at all, though worded much like the first
        "Hello, I am Dana Levi, a salaried customer. I earn a salary and would like to borrow "
        "money for a car.",
    ]
    pools = template_pools(texts)
    assert pools[0] == pools[1]
    assert len({pools[0], pools[2], pools[3], pools[4]}) == 4


def test_a_pool_is_joined_through_its_founder_in_input_order() -> None:
    a = "Order 12 of Ana Silva: where is it now, please?"
    b = "Order 13 of Ben Okafor: where is it now, please?"
    c = "Order 14 of Chen Wei Long: where is it now please, thanks?"
    assert template_pools([a, b, c]) == [0, 0, 0]
    assert template_pools([c, a]) == template_pools([a, c])


def test_a_verifier_can_refuse_a_similar_representative() -> None:
    sets = [shingles("reset my password"), shingles("reset my passwords")]
    assert leader_clusters(sets, 0.6) == [0, 0]
    assert leader_clusters(sets, 0.6, verify=lambda item, founder: False) == [0, 1]
