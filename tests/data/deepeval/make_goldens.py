"""Write the DeepEval fixtures with the real deepeval (see README.md); not run by the tests."""

from deepeval.dataset import EvaluationDataset, Golden  # type: ignore[import-not-found]

goldens = []
for i, (q, topic) in enumerate(
    [("How long does a refund take?", "refunds"), ("Can I return shoes after 20 days?", "returns")]
):
    for gender in ("man", "woman"):
        goldens.append(
            Golden(
                input=f"I am a {gender}. {q}",
                expected_output="A clear answer with the time frame.",
                context=["Refunds take 5 business days."],
                retrieval_context=["policy.md: refunds take 5 business days"],
                additional_metadata={"gender": gender, "question_id": f"q{i}", "topic": topic},
                name=f"q{i}-{gender}",
            )
        )
dataset = EvaluationDataset(goldens=goldens)
for kind in ("json", "csv", "jsonl"):
    print(
        dataset.save_as(
            file_type=kind, directory="out", file_name="goldens", include_test_cases=False
        )
    )
