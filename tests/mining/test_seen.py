"""The trace ids ``suite mine`` has read (mining/seen.py): every id read again is found, in the
same batch or a later one, and new ids are rarely taken for old ones."""

from __future__ import annotations

from spanguard_processor.mining.seen import SeenIds


def test_an_id_read_again_is_found_in_any_later_batch_of_any_width() -> None:
    seen = SeenIds()
    assert seen.seen(["a", "b", "a", "é" * 20]) == [False, False, True, False]
    assert seen.seen(["a", "c", "é" * 20, "x" * 100]) == [True, False, True, False]
    assert seen.seen(["x" * 100, "a" + "\0"]) == [True, False]
    assert seen.seen([]) == []


def test_new_ids_are_rarely_taken_for_old_ones_and_stages_grow() -> None:
    seen = SeenIds(capacity=2048)  # small stages, so that the filter grows in this test
    old = [f"{i:032x}" for i in range(10000)]
    false = sum(sum(seen.seen(old[s : s + 1000])) for s in range(0, len(old), 1000))
    assert len(seen.stages) == 3
    assert all(seen.seen(old[:5000]))
    new = [f"n{i:031x}" for i in range(10000)]
    false += sum(sum(seen.seen(new[s : s + 1000])) for s in range(0, len(new), 1000))
    # below 5e-5 per id: under 1 expected in 20,000 (bench --bloom measures the rate)
    assert false <= 5
