"""The assembler: released when whole, bounded, late spans and partial traces."""

from __future__ import annotations

from dataclasses import dataclass

from spanguard_processor.collector.assembler import TraceAssembler


@dataclass(frozen=True)
class Key:
    trace_id: str
    span_id: str
    is_root: bool = False


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def make(**kwargs: float) -> tuple[TraceAssembler, Clock]:
    clock = Clock()
    return TraceAssembler(clock=clock, **kwargs), clock  # type: ignore[arg-type]


def test_trace_is_released_only_after_root_and_wait_duration_of_silence() -> None:
    asm, clock = make(wait_duration=2.0)
    asm.add([Key("t1", "a"), Key("t1", "r", is_root=True)])
    clock.now = 1.9
    assert asm.poll() == []
    asm.add([Key("t1", "b")])  # activity restarts the wait
    clock.now = 3.8
    assert asm.poll() == []
    clock.now = 3.9
    (released,) = asm.poll()
    assert released.trace_id == "t1" and released.spans == 3
    assert released.partial is False and released.reason == "complete"
    assert asm.in_flight == 0


def test_trace_without_root_waits_for_the_orphan_timeout_and_is_partial() -> None:
    asm, clock = make(wait_duration=1.0, orphan_timeout=10.0)
    asm.add([Key("t1", "a")])
    clock.now = 5.0
    assert asm.poll() == []
    clock.now = 10.0
    (released,) = asm.poll()
    assert released.partial is True and released.reason == "orphaned"


def test_num_traces_bounds_in_flight_and_evicts_least_recently_active() -> None:
    asm, clock = make(wait_duration=5.0, num_traces=2)
    asm.add([Key("t1", "a")])
    clock.now = 1
    asm.add([Key("t2", "a", is_root=True)])
    clock.now = 2
    asm.add([Key("t1", "b")])  # t1 is now the most recently active
    evicted = asm.add([Key("t3", "a")])
    assert [(r.trace_id, r.reason, r.partial) for r in evicted] == [("t2", "evicted", False)]
    assert asm.in_flight == 2
    evicted = asm.add([Key("t4", "a")])
    assert [(r.trace_id, r.partial) for r in evicted] == [("t1", True)]


def test_late_span_after_release_is_released_as_late_and_not_partial() -> None:
    asm, clock = make(wait_duration=1.0)
    asm.add([Key("t1", "r", is_root=True)])
    clock.now = 1.0
    (first,) = asm.poll()
    assert first.partial is False
    asm.add([Key("t1", "child")])
    clock.now = 2.0
    (late,) = asm.poll()  # rootless, yet due after wait_duration and not partial: late
    assert late.partial is False and late.spans == 1


def test_released_traces_are_remembered_for_at_least_remember_released_of_them() -> None:
    def late_after(others: int) -> bool:
        """Whether a span of a trace released before ``others`` more traces is late."""
        asm, _ = make(wait_duration=100.0, remember_released=3)
        for name in ["x"] + [f"t{i}" for i in range(others)]:
            asm.add([Key(name, "r", is_root=True)])
            asm.flush()
        asm.add([Key("x", "again")])
        (released,) = asm.flush()
        return not released.partial  # a rootless group is whole only as a late one

    assert all(late_after(others) for others in range(3))  # among the last 3 released
    assert not any(late_after(others) for others in range(6, 12))  # over twice as many ago


def test_flush_releases_everything_and_marks_rootless_partial() -> None:
    asm, _ = make(wait_duration=100.0)
    asm.add([Key("t1", "r", is_root=True), Key("t2", "a")])
    released = {r.trace_id: r for r in asm.flush()}
    assert released["t1"].partial is False and released["t2"].partial is True
    assert {r.reason for r in released.values()} == {"flushed"}
    assert asm.in_flight == 0 and asm.next_due() is None


def test_next_due_counts_down_from_the_oldest_trace() -> None:
    asm, clock = make(wait_duration=2.0)
    asm.add([Key("t1", "r", is_root=True)])
    clock.now = 0.5
    assert asm.next_due() == 1.5


def test_next_due_of_a_trace_without_root_is_its_orphan_timeout_not_now() -> None:
    # measured: an idle server holding one rootless trace woke its writer every millisecond
    # (7 % of a core) until the orphan timeout, as next_due said 0 from wait_duration on
    asm, clock = make(wait_duration=1.0, orphan_timeout=10.0)
    asm.add([Key("orphan", "a")])
    clock.now = 2.0
    assert asm.poll() == [] and asm.next_due() == 8.0
    clock.now = 3.0
    asm.add([Key("whole", "r", is_root=True)])  # younger, but due before the orphan
    assert asm.next_due() == 1.0
    clock.now = 4.0
    assert [r.trace_id for r in asm.poll()] == ["whole"] and asm.next_due() == 6.0
    clock.now = 10.0
    assert [(r.trace_id, r.reason) for r in asm.poll()] == [("orphan", "orphaned")]
    assert asm.next_due() is None
