"""Wording variants of one template are pooled into one question before the outcome split
(regression/mine/templates.py); other questions never are."""

from __future__ import annotations

from pathlib import Path

from spanguard_processor.common.jsonio import write_jsonl
from spanguard_processor.regression.mine.build import BuildOptions, build_evalset
from spanguard_processor.regression.mine.dedup import leader_clusters
from spanguard_processor.regression.mine.templates import template_pools, words
from spanguard_processor.regression.textnorm import shingles
from spanguard_processor.traces.model import AgentTrace, ProcessTrace, ToolCall


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


def _agent_log(path: Path, questions: list[tuple[str, int]]) -> Path:
    traces = []
    for text, times in questions:
        for n in range(times):
            traces.append(
                AgentTrace(
                    trace_id=f"{len(traces):032x}",
                    request_id=f"req-{len(traces)}",
                    input=text.format(n=100 + n),
                    output="Done: see the link we sent you by e-mail.",
                    trace=ProcessTrace(tool_calls=(ToolCall("lookup"),)),
                ).to_dict()
            )
    write_jsonl(path, traces)
    return path


def test_a_question_pooled_with_one_worded_like_it_keeps_a_case_of_its_own(
    tmp_path: Path,
) -> None:
    """ "reset my password" and "cancel my subscription" share 7 of 9 words and their value:
    one template to the pooling rule. Each still gets a case (on its own requests' path)."""
    reset = "How do I reset my password for order {n}?"
    cancel = "How do I cancel my subscription for order {n}?"
    log = _agent_log(tmp_path / "log.jsonl", [(reset, 10), (cancel, 4)])
    result = build_evalset([log], BuildOptions(out=tmp_path / "ev"))
    assert result.templates_pooled == 1
    inputs = sorted(c.input.split(" for ")[0] for c in result.cases)
    assert inputs == ["How do I cancel my subscription", "How do I reset my password"]
    assert sorted(c.occurrences_in_log for c in result.cases) == [4, 10]
