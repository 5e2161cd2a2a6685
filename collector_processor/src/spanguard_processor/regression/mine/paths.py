"""Splitting a question into its outcome paths (docs/regression.md, "Outcome paths").

A request's *path* is the class of its answer (:func:`~..outcome.classify_answer`: approve,
decline, refer, refusal, json, text …) and its process signature (the tools it called, whether
it escalated, its friction points and plan steps). A question cluster whose requests took
several paths is split in two levels — first by answer class, then, within each class, by
process — and at each level a path becomes its own case only when it is **systematic**:

- it occurred at least :data:`MIN_PATH_ROWS` times, and
- the input explains it: on one input feature — a numeric slot value (an amount, an income, a
  term), the ratio of two of them, or the presence of a word — its requests form one unbroken
  run (no request of another path in between) holding at least :data:`MIN_RUN_SHARE` of them
  (a path of 3 or 4 requests must be unbroken; a large systematic one may have stragglers),
  and the requests of other paths set aside make at most :data:`MAX_ASIDE_SHARE` of its span.

Anything else — a 4 % random escalation, a retry, a rare tool — is folded into the question's
most common path of that level and becomes a *rate* of that case (:mod:`.properties`), never a
case of its own asserting it — except the most common path's own requests outside the run
explaining it (random escalations that made escalation the most common path), which join the
largest other explained path's case: in their own path's case they would look usual and hide
their variation from the stable rule. The representative of every case is a request of the path it
covers — for a path explained by a run an inner request of it, spread over the groups of
inputs (:class:`Representatives`); for an unexplained main path its highest-ranked request —
so replaying its input reproduces that path. Failure seeds keep trace2eval-compatible
treatment: a refusal, and a request with a failure signal (negative feedback, a user retry …)
whose process differs from its path's, is always a case of its own — a failure must not ship
twice, however rare.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, replace
from itertools import groupby

from ...traces.model import ProcessTrace
from ..casematch import Condition, input_words, slot_numbers
from ..outcome import classify_answer
from ..textnorm import SLOT
from .loader import Row
from .templates import words

__all__ = [
    "MAX_ASIDE_SHARE",
    "MIN_PATH_ROWS",
    "MIN_RUN_SHARE",
    "PathKey",
    "ProcessSignature",
    "QuestionPaths",
    "Representatives",
    "Run",
    "When",
    "describe_path",
    "path_counts",
    "path_key",
    "process_signature",
    "split_question",
]

#: A path needs this many requests to become a case of its own.
MIN_PATH_ROWS = 3
#: …and one input feature must hold at least this share of them in one unbroken run.
MIN_RUN_SHARE = 0.8
#: …and the requests of other paths set aside (a random escalation among declines) may make at
#: most this share of its span: a run that appears only once many requests are set aside is
#: not one.
MAX_ASIDE_SHARE = 0.2
#: Numeric slots of a template considered (their ratios too): enough for real templates.
MAX_SLOTS = 6
_MAX_ROUNDS = 8

#: The tools called (sorted), escalated, friction points, plan steps.
ProcessSignature = tuple[tuple[str, ...], bool, int, int]
#: The answer class and the process signature (None without a process trace).
PathKey = tuple[str, ProcessSignature | None]
#: The condition on the input at each level of a question's split (answer class, process).
When = tuple[Condition | None, Condition | None]


def process_signature(process: ProcessTrace | None) -> ProcessSignature | None:
    """What makes two traces of one question different behaviour: the set of tools called,
    escalation, the number of friction points and of plan steps."""
    if process is None:
        return None
    tools = tuple(sorted({call.name for call in process.tool_calls}))
    return (tools, process.escalated, len(process.friction_points), len(process.plan_steps))


def path_key(row: Row, answer_class: str | None = None) -> PathKey:
    outcome = classify_answer(row.output) if answer_class is None else answer_class
    return outcome, process_signature(row.process)


def describe_path(key: PathKey) -> str:
    """``approve · credit_check+compute_offer · not escalated · 0 friction · 4 plan steps``."""
    outcome, process = key
    if process is None:
        return outcome
    tools, escalated, friction, plan = process
    return " · ".join(
        (
            outcome,
            "+".join(tools) or "no tools",
            "escalated" if escalated else "not escalated",
            f"{friction} friction",
            f"{plan} plan steps",
        )
    )


@dataclass(frozen=True, slots=True)
class Run:
    """A path's explaining run: its requests in feature order, and the feature's range."""

    members: list[int]
    condition: Condition


class _Features:
    """The input features of a question's requests: numeric slots, their ratios, words."""

    def __init__(self, rows: Sequence[Row], members: Sequence[int]) -> None:
        # requests in visiting order, never in input order: a run's middle (its representative)
        # and ties on a feature must not depend on which file or replica a trace came from
        self.position = {m: i for i, m in enumerate(members)}
        vectors = {m: slot_numbers(rows[m].input) for m in members}
        length = max(Counter(len(v) for v in vectors.values()).items(), key=lambda i: i[::-1])[0]
        usable = [m for m in members if len(vectors[m]) == length]
        slots = [
            i
            for i in range(min(length, MAX_SLOTS))
            if all(vectors[m][i] is not None for m in usable)
        ]
        self.numeric: list[dict[int, float]] = [
            {m: float(vectors[m][i] or 0) for m in usable} for i in slots
        ]
        #: what each numeric feature is: (slot, None) or the ratio (slot, over)
        self.specs: list[tuple[int, int | None]] = [(i, None) for i in slots]
        for i in slots:  # j/i orders the requests as i/j does, reversed: one of the two
            for j in slots[slots.index(i) + 1 :]:
                if all(vectors[m][j] for m in usable):
                    self.numeric.append(
                        {m: float(vectors[m][i] or 0) / float(vectors[m][j] or 1) for m in usable}
                    )
                    self.specs.append((i, j))
        holders: dict[str, set[int]] = {}
        for m in members:
            for word in input_words(rows[m].input):
                holders.setdefault(word, set()).add(m)
        self.names = sorted(holders)
        self.words = [holders[w] for w in self.names]

    def _numeric_run(
        self, part: set[int], active: set[int], aside: set[int], best: Run | None
    ) -> Run | None:
        """The longest unbroken run of ``part`` on a numeric feature (longer than ``best``)."""
        for spec, feature in zip(self.specs, self.numeric, strict=True):
            ordered = sorted(
                ((v, m) for m, v in feature.items() if m in active),
                key=lambda item: (item[0], self.position[item[1]]),
            )
            away = sorted(v for m, v in feature.items() if m in aside)
            run: list[tuple[float, int]] = []
            start = end = 0
            for _, tied in groupby(ordered, key=lambda item: item[0]):
                same = list(tied)
                if all(m in part for _, m in same):
                    start = start if run else end
                    run = run + same
                else:
                    run = []
                end += len(same)
                if len(run) > (len(best.members) if best else 0):
                    between = bisect_right(away, run[-1][0]) - bisect_left(away, run[0][0])
                    if _few(between, len(run)):
                        above = ordered[start - 1][0] if start else None
                        below = ordered[end][0] if end < len(ordered) else None
                        condition = Condition(
                            spec[0],
                            spec[1],
                            low=run[0][0],
                            high=run[-1][0],
                            above=above,
                            below=below,
                        )
                        best = Run([m for _, m in run], condition)
        return best

    def explained(
        self, part: set[int], active: set[int], aside: set[int] | None = None
    ) -> Run | None:
        """The longest unbroken run of ``part`` on one feature, in feature order, if it
        explains the part; the requests set ``aside`` (of other paths) may not make more than
        :data:`MAX_ASIDE_SHARE` of the run's span."""
        aside = aside or set()
        best = self._numeric_run(part, active, aside, None)
        for word, holders in zip(self.names, self.words, strict=True):
            size = len(best.members) if best else 0
            inside = holders & active
            if (
                size < len(inside) <= len(part)
                and inside <= part
                and _few(len(holders & aside), len(inside))
            ):
                best = Run(sorted(inside, key=self.position.__getitem__), Condition(word=word))
                size = len(inside)
            if size < len(active) - len(inside) <= len(part):
                outside = active - holders
                if outside <= part and _few(len(aside - holders), len(outside)):
                    members = sorted(outside, key=self.position.__getitem__)
                    best = Run(members, Condition(word=word, present=False))
        need = len(part & active)
        if (
            best
            and len(best.members) >= MIN_PATH_ROWS
            and len(best.members) >= MIN_RUN_SHARE * need
        ):
            also = self._numeric_also(best, active, aside) + self._word_also(best, active, aside)
            return Run(best.members, replace(best.condition, also=also))
        return None

    def _numeric_also(self, run: Run, active: set[int], aside: set[int]) -> tuple[Condition, ...]:
        """Every other numeric feature on which ``run``'s requests are exactly one unbroken run
        of ``active`` (two features that move together on day 1), with its range."""
        members, chosen = set(run.members), run.condition
        out = []
        for (slot, over), feature in zip(self.specs, self.numeric, strict=True):
            if (chosen.word is None and (chosen.slot, chosen.over) == (slot, over)) or not (
                members <= feature.keys()
            ):
                continue
            low, high = min(feature[m] for m in members), max(feature[m] for m in members)
            others = [v for m, v in feature.items() if m in active and m not in members]
            away = sum(1 for m, v in feature.items() if m in aside and low <= v <= high)
            if not others or any(low <= v <= high for v in others) or not _few(away, len(members)):
                continue
            above = max((v for v in others if v < low), default=None)
            below = min((v for v in others if v > high), default=None)
            out.append(Condition(slot, over, low=low, high=high, above=above, below=below))
        return tuple(out)

    def _word_also(self, run: Run, active: set[int], aside: set[int]) -> tuple[Condition, ...]:
        """Every other word whose presence (or absence) among ``active`` is exactly ``run``'s."""
        members, chosen = set(run.members), run.condition
        out = []
        for word, holders in zip(self.names, self.words, strict=True):
            if word == chosen.word:
                continue
            if holders & active == members and _few(len(holders & aside), len(members)):
                out.append(Condition(word=word))
            elif active - holders == members and _few(len(aside - holders), len(members)):
                out.append(Condition(word=word, present=False))
        return tuple(out)


def _few(aside: int, run: int) -> bool:
    """Whether ``aside`` requests set aside within a run of ``run`` are few enough."""
    return aside <= MAX_ASIDE_SHARE * (aside + run)


class Representatives:
    """Which request of a run represents its path: one of the run's inner requests (never a
    boundary one, next to another path's), the one whose words that vary within its question
    (a name, a customer type, a purpose) the representatives of the same path chosen so far,
    then of any path, hold least — so the cases of each outcome spread over the groups of
    inputs, and a change for one group meets a case of that group — then the nearest the
    middle. Deterministic: the build visits questions in a fixed order."""

    def __init__(self, rows: Sequence[Row], classes: Sequence[str]) -> None:
        self.rows = rows
        self.classes = classes
        self.seen: Counter[Hashable] = Counter()
        self.shared: frozenset[str] = frozenset()
        self._words: dict[int, frozenset[str]] = {}

    def words(self, m: int) -> frozenset[str]:
        found = self._words.get(m)
        if found is None:
            found = self._words[m] = frozenset(words(self.rows[m].input)) - {SLOT}
        return found

    def question(self, members: Sequence[int]) -> None:
        """The words every request of the question holds (its template's) vary nowhere."""
        self.shared = frozenset.intersection(*(self.words(m) for m in members))

    def _keys(self, m: int) -> list[Hashable]:
        """The words of ``m`` that vary within its question, alone and with its path."""
        path = path_key(self.rows[m], self.classes[m])
        varying = sorted(self.words(m) - self.shared)
        return [*((path, w) for w in varying), *varying]

    def choose(self, run: list[int], taken: Counter[Hashable]) -> int:
        middle = len(run) // 2
        window = range(1, len(run) - 1) if len(run) > 2 else range(middle, middle + 1)

        def held(i: int) -> tuple[int, int]:
            """(by the same path's representatives, by any path's)"""
            keys = self._keys(run[i])
            own = sum(self.seen[k] + taken[k] for k in keys if isinstance(k, tuple))
            return own, sum(self.seen[k] + taken[k] for k in keys if isinstance(k, str))

        return run[min(window, key=lambda i: (*held(i), abs(i - middle), i))]

    def take(self, m: int, counter: Counter[Hashable] | None = None) -> None:
        (self.seen if counter is None else counter).update(self._keys(m))


def _split(
    rows: Sequence[Row],
    members: list[int],
    key: Callable[[int], Hashable],
    common: Counter[Hashable],
    reps: Representatives,
) -> tuple[list[list[int]], list[Condition | None]]:
    """``members`` split by ``key`` into its systematic paths, and the condition on the input
    that explains each; the first part is the most common path (on a tie, the one most common
    in the whole log: a question asked twice that escalated once is not represented by its
    escalation) with every unexplained request folded into it, and its condition None (a new
    request no other part's condition claims is its)."""
    parts: dict[Hashable, list[int]] = {}
    for m in members:
        parts.setdefault(key(m), []).append(m)
    position = {m: i for i, m in enumerate(members)}
    ordered = sorted(parts.values(), key=lambda p: (-len(p), -common[key(p[0])], position[p[0]]))
    main = ordered[0]
    candidates = [main, *(p for p in ordered[1:] if len(p) >= MIN_PATH_ROWS)]
    if len(candidates) == 1:
        whole = members if members[0] in main else [main[0], *(m for m in members if m != main[0])]
        return [whole], [None]
    explained = _runs(candidates, _Features(rows, members))
    runs = [run.members if run else None for run in explained]
    # an explained path is represented by an inner request of its run: never a random
    # straggler, away from the boundary to another path
    taken: Counter[Hashable] = Counter()
    first = main[0] if runs[0] is None else reps.choose(runs[0], taken)
    reps.take(first, taken)
    out = [[first]]
    conditions: list[Condition | None] = [None]
    cased: set[int] = set()
    for run, found in zip(runs[1:], explained[1:], strict=True):
        if run is None or found is None:
            continue
        conditions.append(found.condition)
        middle = reps.choose(run, taken)
        reps.take(middle, taken)
        out.append([middle, *sorted((m for m in run if m != middle), key=position.__getitem__)])
        cased.update(run)
    # the main path's own requests outside the run explaining it are random for their input (an
    # escalation among approvals that made escalation the most common path): in the main case
    # they look usual and hide that variation from the stable rule, so they join the largest
    # other explained path's case, where they count as its variation (docs/regression.md)
    explaining = None if runs[0] is None or len(out) == 1 else set(runs[0])
    strays = [] if explaining is None else [m for m in main if m not in explaining]
    cased.update(strays)
    out[0] += [m for m in members if m not in cased and m != out[0][0]]
    if strays:
        max(out[1:], key=len).extend(strays)
    return out, conditions


def _runs(candidates: list[list[int]], features: _Features) -> list[Run | None]:
    """Each candidate path's explaining run (None: unexplained). The requests of an explained
    path outside its run (a random escalation among systematic ones) are set aside for the next
    round, where they no longer break another path's run (but count in its span). When nothing
    changes any more, each path left unexplained (other than the most common), the larger
    first, is tried once more without the requests of the other paths still unexplained (a
    few random escalations inside a run of declines); a path explained so stays in for the
    rest (random escalations are not read as a run where the declines they replaced were)."""
    everyone = set().union(*candidates)
    runs: list[Run | None] = [None] * len(candidates)
    excluded: set[int] = set()
    for _ in range(_MAX_ROUNDS):
        active = everyone - excluded
        found = [features.explained(set(part), active, excluded) for part in candidates]
        stragglers = {
            m for part, run in zip(candidates, found, strict=True) if run for m in part
        } - {m for run in found if run for m in run.members}
        if _members(found) == _members(runs) and stragglers <= excluded:
            break
        runs = found
        excluded |= stragglers
    open_parts = [i for i in range(1, len(candidates)) if runs[i] is None]
    active = everyone - excluded
    last = list(runs)
    for i in open_parts:  # the larger first; an explained one's requests stay for the rest
        others = {m for j in open_parts if j != i and last[j] is None for m in candidates[j]}
        if others:
            last[i] = features.explained(set(candidates[i]), active - others, excluded | others)
    return last


def _members(runs: list[Run | None]) -> list[list[int] | None]:
    return [run.members if run else None for run in runs]


@dataclass(frozen=True, slots=True)
class QuestionPaths:
    """A question's parts (each becomes a case; representative first) and its path counts."""

    parts: list[list[int]]
    paths: int  # distinct paths its requests took
    cased: int  # of which a case's own path
    folded: int  # requests folded into a case of another path (its rates)
    #: Per part, the condition on the input at each level of the split (answer class, then
    #: process) that its new requests meet; None for a part no new request is matched to by
    #: its template (a refusal, a failure seed: a case for the request that went wrong).
    when: list[When | None] | None = None


def _seeds_apart(
    rows: Sequence[Row], parts: list[list[int]], seed: Callable[[int], bool], when: list[When]
) -> tuple[list[list[int]], list[When | None]]:
    """Failure seeds whose process differs from their part's: a case each (per process)."""
    out: list[list[int]] = []
    conditions: list[When | None] = []
    for part, condition in zip(parts, when, strict=True):
        own = process_signature(rows[part[0]].process)
        apart: dict[ProcessSignature | None, list[int]] = {}
        for m in part[1:]:
            signature = process_signature(rows[m].process)
            if signature != own and seed(m):
                apart.setdefault(signature, []).append(m)
        taken = {m for group in apart.values() for m in group}
        out += [[m for m in part if m not in taken], *apart.values()]
        conditions += [condition, *(None for _ in apart)]
    return out, conditions


def path_counts(rows: Sequence[Row], classes: Sequence[str]) -> Counter[Hashable]:
    """How often each answer class and each process signature occurs in the whole log."""
    counts: Counter[Hashable] = Counter(classes)
    counts.update(process_signature(row.process) for row in rows)
    return counts


def split_question(
    rows: Sequence[Row],
    members: list[int],
    seed: Callable[[int], bool],
    classes: Sequence[str],
    common: Counter[Hashable],
    reps: Representatives | None = None,
) -> QuestionPaths:
    """Split one question cluster (``members`` in visit order) into its outcome paths.
    ``seed(m)``: whether request ``m`` carries a failure signal; ``classes``: each request's
    answer class (:func:`~..outcome.classify_answer`); ``common``: :func:`path_counts` of
    the whole log (ties between paths go to the commoner); ``reps``: the build's choice of
    representatives (:class:`Representatives`), told each part's."""
    refusals = [m for m in members if rows[m].fallback is not None]
    answered = [m for m in members if rows[m].fallback is None]
    if all(rows[m].process is None for m in members):  # a plain log: split by refusal only
        plain = [part for part in (refusals, answered) if part]
        plain.sort(key=lambda part: part[0] != members[0])
        return QuestionPaths(plain, len(plain), len(plain), 0, [None] * len(plain))
    reps = reps or Representatives(rows, classes)
    reps.question(members)
    by_process: dict[ProcessSignature | None, list[int]] = {}
    for m in refusals:  # failure seeds, whatever their number (trace2eval's treatment)
        by_process.setdefault(process_signature(rows[m].process), []).append(m)
    parts = list(by_process.values())
    when: list[When | None] = [None] * len(parts)
    if answered:
        position = {m: i for i, m in enumerate(members)}
        paths: list[list[int]] = []
        levels: list[When] = []
        by_class, first_levels = _split(rows, answered, classes.__getitem__, common, reps)
        for outcome, first in zip(by_class, first_levels, strict=True):
            # requests folded in from another class stay folded: never split a second time
            mine = [m for m in outcome if classes[m] == classes[outcome[0]]]
            sub, second = _split(
                rows, mine, lambda m: process_signature(rows[m].process), common, reps
            )
            folded = [m for m in outcome if classes[m] != classes[outcome[0]]]
            sub[0] = [sub[0][0], *sorted(sub[0][1:] + folded, key=position.__getitem__)]
            paths += sub
            levels += [(first, condition) for condition in second]
        apart, conditions = _seeds_apart(rows, paths, seed, levels)
        parts += apart
        when += conditions
    for part in parts:
        reps.take(part[0])
    signature = {m: (classes[m], process_signature(rows[m].process)) for m in members}
    cased = {signature[part[0]] for part in parts}
    off_path = sum(1 for part in parts for m in part if signature[m] != signature[part[0]])
    return QuestionPaths(parts, len(set(signature.values())), len(cased), off_path, when)
