"""Regression's closed vocabularies, one :class:`~enum.StrEnum` each.

Every member *is* its JSON string (``Outcome.PASS == "pass"``), so ``cases.jsonl``, run files
and ``check`` output are unchanged; the enum names the set of values once. The check kinds and
their families live with the checks (:mod:`.checks`), the gate's rule directions with the gate.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "AdjustAction",
    "FailureKind",
    "FailureReason",
    "FeedbackLabel",
    "MatchKind",
    "Outcome",
    "Producer",
    "SelectMode",
    "SelfCheckVerdict",
    "SignalName",
]


class Outcome(StrEnum):
    """One case in a run (``case_results.<id>``)."""

    PASS = "pass"
    FAIL = "fail"
    MISSING = "missing"


class MatchKind(StrEnum):
    """How a case found its record, in the order tried (``matching`` in a run file)."""

    CASE_ID = "case_id"
    SOURCE_TRACE_ID = "source_trace_id"
    QUESTION = "question"
    #: by the case's template and input range (``match``): a request of another day
    TEMPLATE = "template"


class FailureReason(StrEnum):
    """Why a case is listed under ``metrics.failures`` (trace2eval 0.5.1's reasons)."""

    MISSING_OUTPUT = "missing_output"
    CHECK_FAILED = "check_failed"


class SelfCheckVerdict(StrEnum):
    """A case's checks run on the output it was mined from (``self_check.verdict``)."""

    OK = "ok"
    #: a failure seed whose checks pass on its own failing output
    FAILURE_NOT_REPRODUCED = "failure_not_reproduced"
    #: a trusted reference that fails its own checks
    REFERENCE_FAILS_OWN_CHECKS = "reference_fails_own_checks"


class FailureKind(StrEnum):
    """What kind of failure signal chose a case (``failure_kind``)."""

    NONE = "none"
    SHAPE = "shape"
    BEHAVIOUR = "behaviour"
    SHAPE_AND_BEHAVIOUR = "shape_and_behaviour"


class SelectMode(StrEnum):
    """Which clusters become cases: ``coverage`` (every question and path) or ``signals``
    (trace2eval's selection)."""

    COVERAGE = "coverage"
    SIGNALS = "signals"


class AdjustAction(StrEnum):
    """What self-consistency did to a mined check (``adjusted_checks[].action``)."""

    OMITTED = "omitted"
    LOOSENED = "loosened"


class Producer(StrEnum):
    """Who wrote a run file ``check`` reads."""

    SPANGUARD = "spanguard"
    TRACE2EVAL = "trace2eval"


class FeedbackLabel(StrEnum):
    """A user's feedback as trace2eval labels it."""

    NEGATIVE = "negative"
    POSITIVE = "positive"


class SignalName(StrEnum):
    """Why a log row is worth a case (trace2eval 0.5.1's signals, §1.2 of the spec)."""

    NEGATIVE_FEEDBACK = "negative_feedback"
    USER_RETRIED = "user_retried"
    EMPTY_OUTPUT = "empty_output"
    EXPECTED_SHAPE_VIOLATED = "expected_shape_violated"
    FALLBACK_PHRASE = "fallback_phrase"
    EXPLICIT_EXPECTATION = "explicit_expectation"
    OUTPUT_MUCH_SHORTER = "output_much_shorter"
    OUTPUT_MUCH_LONGER = "output_much_longer"
    SLOW_RESPONSE = "slow_response"
    EXPENSIVE_CALL = "expensive_call"
