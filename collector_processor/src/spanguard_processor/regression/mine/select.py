"""Scoring, grouping and clustering the log, then choosing which clusters become cases.

Rows are visited in ``(−score, id, row)`` order, as trace2eval does. Rows whose inputs fold to
the same text (after shared context lines are stripped and values — numbers, amounts, ids,
dates — are replaced by a slot) form one *phrasing group*; groups are clustered by linking each
to the first-created cluster whose representative it is similar to (exact Jaccard via
:mod:`.dedup`). Rows are keyed by position, never by id.

Text clusters of agent requests that are wording variants of one template are pooled into one
question (:mod:`.templates`); a pooled text cluster that ends up representing no case keeps one
on its commonest systematic path. Then each question is split into its *outcome paths*
(:mod:`.paths`): a refusal is always
its own case; other agent requests (with a process trace) split by the class of their answer
and then by process, where a
path occurring at least three times and explained by the input (its slot values or words) is
its own case and a rare or random one becomes a rate of its question's most common path.
Clusters are kept in the order their representatives were visited.

Which clusters become cases (:func:`select`): by default every one (``coverage``), those with
a failure signal first when the case limit cuts, then the ones holding the most traffic;
``signals`` is trace2eval's selection (a signal scoring at least ``min_score``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..case import Signal
from ..casematch import CaseMatch
from ..outcome import classify_answer
from ..textnorm import fold, shingles, slot_values
from ..vocabulary import SelectMode, SignalName
from .dedup import jaccard, leader_clusters, strip_shared_context
from .loader import Row
from .paths import Representatives, When, path_counts, process_signature, split_question
from .signals import QUALITY_SIGNALS, LogContext, build_context, compute_signals, score
from .sparse_dedup import leader_clusters_sparse
from .templates import template_pools

__all__ = [
    "SEED_SIGNALS",
    "SELECT_MODES",
    "Cluster",
    "ClusterHealth",
    "Selection",
    "cluster_log",
    "select",
]

#: Signals that make a request a failure seed (casebuild's seeds).
SEED_SIGNALS = QUALITY_SIGNALS | {SignalName.OUTPUT_MUCH_LONGER}
#: ``coverage``: a case for every question cluster and path; ``signals``: trace2eval's choice.
SELECT_MODES = tuple(m.value for m in SelectMode)


@dataclass
class Cluster:
    """One question: its phrasing groups (the first founded it) and its representative row."""

    groups: list[int]
    representative: int
    size: int = 0
    #: Set when a text cluster was split into outcome paths (:mod:`.paths`): exactly this
    #: part's rows, its representative first, and every row of the text cluster it came from
    #: (the question's whole traffic).
    rows: list[int] | None = None
    family: list[int] | None = None
    #: Set when wording variants of one template were pooled: each text cluster's groups.
    variants: list[list[int]] | None = None
    #: How a new request is recognised as this cluster's (agent traffic; None: it is not).
    match: CaseMatch | None = None


@dataclass(frozen=True, slots=True)
class ClusterHealth:
    threshold: float
    clusters: int
    multi_member_clusters: int
    largest: int
    share_in_clusters: float
    below_threshold: int
    compared: int
    worst_similarity: float


@dataclass
class Selection:
    rows: Sequence[Row]
    context: LogContext
    signals: list[list[Signal]]
    scores: list[float]
    rank: list[int]
    group_rows: list[list[int]]
    group_sets: list[frozenset[str]]
    clusters: list[Cluster]
    health: ClusterHealth
    chosen: list[Cluster] = field(default_factory=list)
    #: Text clusters split into several outcome paths (several cases).
    split_by_process: int = 0
    #: Distinct outcome paths (answer class and process) over all questions, those that are a
    #: case's own path, and the requests folded into a case of another path as its rates.
    questions: int = 0  # question clusters before the split into paths
    #: Text clusters pooled into another as a wording variant of one template, and those of
    #: them given a case of their own (they represented no part of the pooled question).
    templates_pooled: int = 0
    variant_cases: int = 0
    paths_found: int = 0
    paths_cased: int = 0
    folded_rows: int = 0
    no_signal: int = 0
    below_min_score: int = 0
    beyond_limit: int = 0

    @property
    def covered_rows(self) -> int:
        """Requests of the log that belong to a chosen cluster."""
        return sum(cluster.size for cluster in self.chosen)

    def members(self, cluster: Cluster) -> list[int]:
        """Row indices of a cluster in visiting order; the representative first."""
        if cluster.rows is not None:
            return cluster.rows
        return self._text_members(cluster)

    def family(self, cluster: Cluster) -> list[int]:
        """Every row of the question ``cluster`` belongs to, whatever its process."""
        return cluster.family if cluster.family is not None else self.members(cluster)

    def _text_members(self, cluster: Cluster) -> list[int]:
        rows = [row for group in cluster.groups for row in self.group_rows[group]]
        if len(cluster.groups) > 1:
            rows.sort(key=self.rank.__getitem__)
        return rows

    def seed(self, row: int) -> bool:
        """Whether ``row`` carries a failure signal (a failure seed)."""
        return any(s.name in SEED_SIGNALS for s in self.signals[row])

    @property
    def collapsed(self) -> int:
        return sum(cluster.size - 1 for cluster in self.chosen)


def _group_keys(
    rows: Sequence[Row], order: list[int]
) -> tuple[list[list[int]], list[str], list[str]]:
    """Phrasing groups in visiting order: their rows, their keys and the text of their first
    request with shared context lines stripped."""
    stripped = strip_shared_context(row.input for row in rows)
    key_of_input: dict[str, str] = {}
    group_of_key: dict[str, int] = {}
    group_rows: list[list[int]] = []
    keys: list[str] = []
    texts: list[str] = []
    for index in order:
        text = rows[index].input
        key = key_of_input.get(text)
        if key is None:
            key = fold(slot_values(stripped.get(text, text))) or "\x00" + text.strip()
            key_of_input[text] = key
        group = group_of_key.get(key)
        if group is None:
            group = group_of_key[key] = len(group_rows)
            group_rows.append([])
            keys.append(key)
            texts.append(stripped.get(text, text))
        group_rows[group].append(index)
    return group_rows, keys, texts


def _health(
    sel_clusters: list[Cluster], sets: list[frozenset[str]], threshold: float, total: int
) -> ClusterHealth:
    multi = [c for c in sel_clusters if c.size > 1]
    worst, below, compared = 1.0, 0, 0
    for cluster in multi:
        rep = sets[cluster.groups[0]]
        for group in cluster.groups[1:]:
            compared += 1
            value = jaccard(rep, sets[group])
            worst = min(worst, value)
            below += value < threshold
    return ClusterHealth(
        threshold=threshold,
        clusters=len(sel_clusters),
        multi_member_clusters=len(multi),
        largest=max((c.size for c in sel_clusters), default=0),
        share_in_clusters=sum(c.size for c in multi) / total if total else 0.0,
        below_threshold=below,
        compared=compared,
        worst_similarity=worst,
    )


def cluster_log(
    rows: Sequence[Row],
    threshold: float,
    matcher: Callable[[str, str], float] | None = None,
    timing: bool = True,
) -> Selection:
    """Score, group and cluster ``rows``; with ``timing=False`` latency and cost raise no signal
    (they neither pick nor order cases)."""
    context = build_context(rows)
    if not timing:
        context = LogContext(None, None, context.median_chars)
    signals = [compute_signals(row, context) for row in rows]
    scores = [score(s) for s in signals]
    order = sorted(range(len(rows)), key=lambda i: (-scores[i], rows[i].id, i))
    rank = [0] * len(rows)
    for position, index in enumerate(order):
        rank[index] = position
    group_rows, keys, texts = _group_keys(rows, order)
    sets = [frozenset() if key.startswith("\x00") else shingles(key) for key in keys]
    if matcher is not None:
        raw = [rows[members[0]].input for members in group_rows]

        def link(item: int, rep: int) -> bool:
            return matcher(raw[item], raw[rep]) >= threshold

        assignment = leader_clusters(sets, threshold, link)
    else:
        assignment = leader_clusters_sparse(sets, threshold)
    clusters: list[Cluster] = []
    for group, target in enumerate(assignment):
        if target == len(clusters):
            clusters.append(Cluster(groups=[], representative=group_rows[group][0]))
        clusters[target].groups.append(group)
        clusters[target].size += len(group_rows[group])
    health = _health(clusters, sets, threshold, len(rows))
    selection = Selection(rows, context, signals, scores, rank, group_rows, sets, clusters, health)
    _pool_templates(selection, texts)
    _split_by_path(selection)
    return selection


def _pool_templates(selection: Selection, texts: list[str]) -> None:
    """Merge the text clusters of agent requests that are wording variants of one template
    (:mod:`.templates`) into one question, before its split into outcome paths."""
    rows = selection.rows
    agent = [
        all(rows[m].process is not None for g in c.groups for m in selection.group_rows[g])
        for c in selection.clusters
    ]
    if sum(agent) < 2:
        return
    positions = [p for p, is_agent in enumerate(agent) if is_agent]
    found = template_pools([texts[selection.clusters[p].groups[0]] for p in positions])
    pool = dict(zip(positions, found, strict=True))
    into: dict[int, Cluster] = {}
    merged: list[Cluster] = []
    for position, cluster in enumerate(selection.clusters):
        if not agent[position]:
            merged.append(cluster)
            continue
        target = into.get(pool[position])
        if target is None:
            into[pool[position]] = cluster
            merged.append(cluster)
        else:
            target.variants = (target.variants or [list(target.groups)]) + [cluster.groups]
            target.groups = target.groups + cluster.groups
            target.size += cluster.size
            selection.templates_pooled += 1
    selection.clusters = merged


def _split_by_path(selection: Selection) -> None:
    split: list[Cluster] = []
    selection.questions = len(selection.clusters)
    # outcome paths are an agent's: a request without a process trace is split by refusal only
    classes = [
        classify_answer(row.output) if row.process is not None else "" for row in selection.rows
    ]
    common = path_counts(selection.rows, classes)
    reps = Representatives(selection.rows, classes)
    for cluster in selection.clusters:
        members = selection.members(cluster)
        paths = split_question(selection.rows, members, selection.seed, classes, common, reps)
        split_parts = len(paths.parts)
        when = list(paths.when or [None] * split_parts)
        if cluster.variants is not None:
            selection.folded_rows -= _variant_cases(
                selection, cluster.variants, paths.parts, classes, when
            )
            selection.variant_cases += len(paths.parts) - split_parts
        # a wording variant given a case of its own is told apart by its own wording
        founder = selection.rows[members[0]]
        matches = [
            _match(founder, w, selection.rows[part[0]] if i >= split_parts else None)
            for i, (part, w) in enumerate(zip(paths.parts, when, strict=True))
        ]
        selection.paths_found += paths.paths
        selection.paths_cased += paths.cased
        selection.folded_rows += paths.folded
        if len(paths.parts) == 1 and paths.parts[0] == members:
            cluster.match = matches[0]
            split.append(cluster)
            continue
        selection.split_by_process += len(paths.parts) > 1
        split += [
            Cluster(cluster.groups, part[0], len(part), rows=part, family=members, match=match)
            for part, match in zip(paths.parts, matches, strict=True)
        ]
    if selection.split_by_process:
        split.sort(key=lambda c: selection.rank[c.representative])
    selection.clusters = split


def _match(founder: Row, when: When | None, variant: Row | None) -> CaseMatch | None:
    """A part's template (its question's founding request, values as slots), conditions, and
    for a wording variant's own case, that wording."""
    if when is None:
        return None
    levels = list(when)
    while levels and levels[-1] is None:
        levels.pop()
    wording = slot_values(variant.input) if variant is not None else None
    return CaseMatch(slot_values(founder.input), tuple(levels), wording)


def _variant_cases(
    selection: Selection,
    variants: list[list[int]],
    parts: list[list[int]],
    classes: list[str],
    when: list[When | None],
) -> int:
    """A pooled text cluster none of whose requests represents a part (a wording variant, or
    another question worded much like it) gets a case of its own on the commonest path of its
    requests that is a case's own path — never on a rare or random one. Its requests on that
    path move into it from the parts they were folded into (``parts`` grows in place, ``when``
    with the conditions of the part whose path it takes); returns how many of them had been
    folded into a part of another path."""
    rows = selection.rows

    def path(m: int) -> tuple[str, object]:
        return classes[m], process_signature(rows[m].process)

    cased = {path(part[0]) for part in parts}
    where = {m: part for part in parts for m in part[1:]}
    off_path = 0
    for groups in variants:
        mine = sorted(
            (m for g in groups for m in selection.group_rows[g]), key=selection.rank.__getitem__
        )
        if any(m not in where for m in mine):
            continue  # it represents a part already
        counts = Counter(path(m) for m in mine if path(m) in cased)
        if not counts:
            continue
        key = max(counts, key=counts.__getitem__)  # on a tie, the first met
        moved = [m for m in mine if path(m) == key]
        for m in moved:
            off_path += path(where[m][0]) != key
            where[m].remove(m)
        when.append(next(w for part, w in zip(parts, when, strict=True) if path(part[0]) == key))
        parts.append(moved)
    return off_path


def select(
    selection: Selection, max_cases: int, min_score: float, mode: str = SelectMode.COVERAGE
) -> Selection:
    """Choose the clusters that become cases, in creation order, at most ``max_cases``.

    ``signals`` (trace2eval): clusters whose representative has a signal scoring at least
    ``min_score``. ``coverage``: every cluster; when the limit cuts, the signalled ones are
    kept first, then the rest by the traffic they hold (largest first, then creation order).
    """
    if mode not in SELECT_MODES:
        raise ValueError(f"unknown selection {mode!r}; expected one of {SELECT_MODES}")
    signalled: list[int] = []
    for position, cluster in enumerate(selection.clusters):
        value = selection.scores[cluster.representative]
        if value <= 0:
            selection.no_signal += 1
        elif value < min_score and mode == SelectMode.SIGNALS:
            selection.below_min_score += 1
        elif value >= min_score:
            signalled.append(position)
    if mode == SelectMode.SIGNALS:
        wanted = signalled
    else:
        taken = set(signalled)
        rest = sorted(
            (p for p in range(len(selection.clusters)) if p not in taken),
            key=lambda p: -selection.clusters[p].size,
        )
        wanted = signalled + rest
    selection.beyond_limit = max(0, len(wanted) - max_cases)
    selection.chosen = [selection.clusters[p] for p in sorted(wanted[:max_cases])]
    return selection
