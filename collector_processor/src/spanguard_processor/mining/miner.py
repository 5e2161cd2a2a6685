"""Mining a counterfactual suite from production traffic (docs/suite-mining.md).

One streaming pass over the traces keeps one entry per distinct *template* (the request with
each mention replaced by its attribute and each number by a value slot), never the requests
themselves: memory grows with the templates, not with the traffic. The templates are then
clustered with case mining's leader clustering (exact Jaccard over character bigrams, each
phrasing linked to its cluster's founder), so near-identical phrasings become one seed.

Privacy (docs/suite-mining.md, "Privacy"): every request's personal data is scrubbed
(:mod:`.personal`) before it becomes a template; a template is a seed only when at least
``min_users`` distinct senders (user id, else session id; else each request counts as one) sent
it after scrubbing, and a template stating a health or finance fact needs that many *recorded*
senders; a trace read twice (an export and its store) counts once (:mod:`.seen`).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice, product
from pathlib import Path

from ..inputs.evaluation import Entry, RecordedTraces, RowFormat, read_evaluation_inputs
from ..regression.mine.dedup import leader_clusters
from ..regression.textnorm import detect_fallback, fold, shingles, slot_values
from .metrics import MinedMetric, ProcessRanges, RangeTracker
from .observe import ObservedGroup, Observer
from .personal import Scrubber
from .requests import Request, request_of
from .seen import SeenIds
from .swap import Detection, Mention, Swapper

__all__ = ["MAX_LISTED_TRACES", "MinedSeed", "MiningOptions", "MiningResult", "mine"]

#: A seed lists at most this many production trace ids (``requests`` stays exact); a template
#: remembers at most this many distinct senders (``users`` is exact below it).
MAX_LISTED_TRACES = 1000
_MAX_PROBLEMS = 20
_BATCH = 1024  # requests whose ids are checked against those read before at once
_ANONYMOUS = "request:"  # the sender of a request that records no user or session id
_DIGIT = re.compile(r"\d")

Redact = Callable[[str], "str | None"]


@dataclass(frozen=True, slots=True)
class MiningOptions:
    min_users: int = 3
    max_seeds: int | None = None
    threshold: float = 0.8
    redact: Redact | None = None  # the configured redactor, run over every prompt written


@dataclass(frozen=True, slots=True)
class MinedSeed:
    """One seed: its template, its variants and the production traffic it came from."""

    id: str
    attributes: tuple[str, ...]
    template: str
    variants: tuple[tuple[tuple[tuple[str, str], ...], str], ...]  # (assignment, prompt)
    requests: int
    traffic_share: float
    phrasings: int
    trace_ids: tuple[str, ...]
    observed: tuple[tuple[str, int], ...]  # detected value ("gender=female") → requests
    users: int = 0  # distinct senders of the cluster (at most MAX_LISTED_TRACES per phrasing)
    # senders of the seed text's numbers (all of them when the text holds none): under
    # --min-users, the numbers are one user's values
    values_users: int = 0


@dataclass(frozen=True, slots=True)
class MiningResult:
    seeds: tuple[MinedSeed, ...]
    traces: int = 0  # requests read (each trace once)
    duplicates: int = 0  # traces read again (the same trace id in a second input), not counted
    identified: int = 0  # requests recording a user or session id
    no_content: int = 0  # recorded without content: nothing to mine
    mention_free: int = 0
    mention_requests: int = 0  # requests with a mention, clean or not
    unclean: tuple[tuple[str, int], ...] = ()  # why a mention could not be swapped → requests
    templates: int = 0  # distinct templates seen
    clusters: int = 0
    below_min: int = 0  # clusters no phrasing of which reached --min-users
    below_min_requests: int = 0
    sensitive: int = 0  # clusters stating health or finance facts, too few recorded users
    sensitive_requests: int = 0
    personal: tuple[tuple[str, int], ...] = ()  # personal data scrubbed: kind → requests
    cut: int = 0  # clusters past --max-seeds
    redacted_away: int = 0
    covered_requests: int = 0
    problems: tuple[str, ...] = ()
    skipped: int = 0
    observed: tuple[ObservedGroup, ...] = ()
    ranges: ProcessRanges = field(default_factory=ProcessRanges)
    metrics: tuple[MinedMetric, ...] = ()  # what the suite gates (chosen after the pass)

    @property
    def covered_share(self) -> float:
        """Share of mention-bearing requests whose template is a seed of the suite."""
        return self.covered_requests / self.mention_requests if self.mention_requests else 0.0


@dataclass
class _Template:
    text: str
    mentions: tuple[Mention, ...]
    attributes: tuple[str, ...]
    requests: int = 0
    trace_ids: list[str] = field(default_factory=list)
    observed: Counter[str] = field(default_factory=Counter)
    first: str = ""  # the first request, mentions masked, numbers kept
    people: set[str] = field(default_factory=set)  # distinct senders (capped)
    value_people: set[str] = field(default_factory=set)  # … of the first request's numbers
    sensitive: str | None = None  # the health or finance fact it states

    def supported(self, k: int) -> bool:
        """At least ``k`` distinct senders; recorded ones when it states a sensitive fact."""
        if self.sensitive is None:
            return len(self.people) >= k
        return sum(not p.startswith(_ANONYMOUS) for p in self.people) >= k


def _remember(people: set[str], sender: str) -> None:
    if len(people) < MAX_LISTED_TRACES:
        people.add(sender)


def _slotted(text: str, mentions: Sequence[Mention], slot: Callable[[str], str]) -> str:
    """``text`` with each mention replaced by ``slot(its attribute)``."""
    out, at = [], 0
    for m in mentions:
        out += [text[at : m.start], slot(m.attribute)]
        at = m.end
    out.append(text[at:])
    return "".join(out)


def masked(text: str, mentions: Sequence[Mention]) -> str:
    """The request with each mention as ``§attribute§`` (numbers kept); with each number as a
    value slot too (``slot_values``), it is the template's key."""
    return _slotted(text, mentions, lambda attribute: f"§{attribute}§")


def display_template(text: str, mentions: Sequence[Mention]) -> str:
    """The representative request with each mention as ``{attribute}``."""
    return _slotted(text, mentions, lambda attribute: "{" + attribute + "}")


class _Miner:
    def __init__(self, swapper: Swapper, options: MiningOptions, scrubber: Scrubber) -> None:
        self.swapper = swapper
        self.options = options
        self.scrubber = scrubber
        self.templates: dict[str, _Template] = {}
        self.observer = Observer()
        self.ranges = RangeTracker()
        self.seen = SeenIds()
        self.counts: Counter[str] = Counter()
        self.unclean: Counter[str] = Counter()
        self.personal: Counter[str] = Counter()
        self.problems: list[str] = []

    def _requests(self, entries: Iterable[Entry]) -> Iterator[Request]:
        for entry in entries:
            if entry.problem is not None:
                self.counts["skipped"] += 1
                if len(self.problems) < _MAX_PROBLEMS:
                    where = f"{entry.file}:{entry.line}"
                    field_ = f"field '{entry.field}': " if entry.field else ""
                    self.problems.append(f"{where}: {field_}{entry.problem}")
                continue
            request = request_of(entry)
            if request is not None:
                yield request

    def read(self, entries: Iterable[Entry]) -> None:
        """Every request once: a trace id read before (a second input holding the same
        trace) is counted as a duplicate, not as traffic."""
        requests = self._requests(entries)
        while batch := list(islice(requests, _BATCH)):
            again = iter(self.seen.seen([r.id for r in batch if r.dedupe]))
            for request in batch:
                if request.dedupe and next(again):
                    self.counts["duplicates"] += 1
                else:
                    self.add(request)

    def add(self, request: Request) -> None:
        self.counts["traces"] += 1
        self.counts["identified"] += request.sender is not None
        self.ranges.add(request)
        if request.text is None or not request.text.strip():
            self.counts["no_content"] += 1
            return
        detection: Detection = self.swapper.detect(request.text)
        if not detection.mentions:
            self.counts["mention_free"] += 1
            return
        self.counts["mention_requests"] += 1
        refused = detect_fallback(request.output) is not None if request.output else None
        tools = len(request.tools) if request.tools is not None else None
        self.observer.add(detection.mentions, request.escalated, tools, refused)
        if detection.unclean is not None:
            self.unclean[detection.unclean] += 1
            return
        scrubbed = self.scrubber.scrub(request.text, [(m.start, m.end) for m in detection.mentions])
        if scrubbed.kinds:  # the text moved: find the mentions anew
            self.personal.update(scrubbed.kinds)
            detection = self.swapper.detect(scrubbed.text)
            if not detection.mentions or detection.unclean is not None:
                self.unclean["personal data beside the mention"] += 1
                return
        self._file(request, scrubbed.text, detection, scrubbed.sensitive)

    def _file(
        self, request: Request, text: str, detection: Detection, sensitive: str | None
    ) -> None:
        """Count a clean, scrubbed request under its template."""
        masked_text = masked(text, detection.mentions)
        key = slot_values(masked_text)
        template = self.templates.get(key)
        if template is None:
            template = _Template(text, detection.mentions, detection.attributes, first=masked_text)
            template.sensitive = sensitive
            self.templates[key] = template
        sender = request.sender or _ANONYMOUS + request.id
        template.requests += 1
        _remember(template.people, sender)
        if masked_text == template.first:
            _remember(template.value_people, sender)
        if len(template.trace_ids) < MAX_LISTED_TRACES:
            template.trace_ids.append(request.id)
        for m in {(m.attribute, m.value) for m in detection.mentions}:
            template.observed[f"{m[0]}={m[1]}"] += 1

    def clusters(self) -> list[list[str]]:
        """Template keys grouped into clusters, most frequent phrasing first in each; the
        clusters ordered by requests (most first), then by founder."""
        by_slots: dict[tuple[str, ...], list[str]] = {}
        for key, template in self.templates.items():
            by_slots.setdefault(template.attributes, []).append(key)
        clusters: list[list[str]] = []
        for slots in sorted(by_slots):
            keys = sorted(by_slots[slots], key=lambda k: (-self.templates[k].requests, k))
            sets = [shingles(fold(k)) for k in keys]
            assignment = leader_clusters(sets, self.options.threshold)
            grouped: dict[int, list[str]] = {}
            for key, cluster in zip(keys, assignment, strict=True):
                grouped.setdefault(cluster, []).append(key)
            clusters.extend(grouped.values())
        clusters.sort(key=lambda ks: (-sum(self.templates[k].requests for k in ks), ks[0]))
        return clusters


def _variants(
    swapper: Swapper, template: _Template, redact: Redact | None
) -> list[tuple[tuple[tuple[str, str], ...], str]] | None:
    names = template.attributes
    out = []
    for combo in product(*(swapper.values(a) for a in names)):
        assignment = dict(zip(names, combo, strict=True))
        prompt: str | None = swapper.render(template.text, template.mentions, assignment)
        if redact is not None and prompt is not None:
            prompt = redact(prompt)
        if prompt is None or not prompt.strip():
            return None
        out.append((tuple(sorted(assignment.items())), prompt))
    return out


def _seed(miner: _Miner, keys: list[str], rep: _Template, total: int) -> MinedSeed | None:
    """The seed of the cluster ``keys``, its text the phrasing ``rep`` (one enough senders
    share)."""
    members = [miner.templates[k] for k in keys]
    redact, first = miner.options.redact, rep.first
    people = set().union(*(t.people for t in members))
    values_users = len(rep.value_people) if _DIGIT.search(first) else len(people)
    if redact is not None:  # the template is the redacted request, its mentions found anew
        text = redact(rep.text)
        detection = miner.swapper.detect(text) if text else None
        if (
            text is None
            or detection is None
            or detection.unclean
            or detection.attributes != rep.attributes
        ):
            return None
        rep = _Template(text, detection.mentions, detection.attributes)
    variants = _variants(miner.swapper, rep, redact)
    if variants is None:
        return None
    requests = sum(t.requests for t in members)
    observed: Counter[str] = Counter()
    for t in members:
        observed.update(t.observed)
    return MinedSeed(
        f"mined-{hashlib.sha256(keys[0].encode('utf-8')).hexdigest()[:10]}",
        rep.attributes,
        display_template(rep.text, rep.mentions),
        tuple(variants),
        requests,
        requests / total if total else 0.0,
        len(keys),
        tuple([i for t in members for i in t.trace_ids][:MAX_LISTED_TRACES]),
        tuple(sorted(observed.items())),
        len(people),
        values_users,
    )


def _select(miner: _Miner) -> tuple[list[MinedSeed], Counter[str]]:
    """One seed per cluster whose most frequent phrasing that ``min_users`` senders share
    (recorded ones, when it states a health or finance fact) gives its text; a cluster
    without one is dropped and counted."""
    opts, stats = miner.options, Counter[str]()
    total = miner.counts["traces"] - miner.counts["no_content"]
    seeds: list[MinedSeed] = []
    for keys in miner.clusters():
        stats["clusters"] += 1
        members = [miner.templates[k] for k in keys]
        requests = sum(t.requests for t in members)
        rep = next((t for t in members if t.supported(opts.min_users)), None)
        if rep is None:
            sensitive = any(t.sensitive and len(t.people) >= opts.min_users for t in members)
            reason = "sensitive" if sensitive else "below_min"
            stats[reason] += 1
            stats[f"{reason}_requests"] += requests
            continue
        if opts.max_seeds is not None and len(seeds) >= opts.max_seeds:
            stats["cut"] += 1
            continue
        seed = _seed(miner, keys, rep, total)
        if seed is None:
            stats["redacted_away"] += 1
            continue
        seeds.append(seed)
        stats["covered"] += requests
    return seeds, stats


def mine(
    paths: Sequence[Path] | RecordedTraces,
    swapper: Swapper,
    options: MiningOptions = MiningOptions(),
    scrubber: Scrubber | None = None,
) -> MiningResult:
    """Mine ``paths`` (agent traces, trace2eval logs, span files, stores; or agent traces
    read through an engine) in one pass; ``scrubber`` (default: one without first names)
    scrubs each request's personal data."""
    miner = _Miner(swapper, options, scrubber or Scrubber())
    if isinstance(paths, RecordedTraces):
        miner.read(paths.entries())
    else:
        miner.read(read_evaluation_inputs(list(paths), rows=RowFormat.TRACE2EVAL))
    seeds, stats = _select(miner)
    c = miner.counts
    return MiningResult(
        seeds=tuple(seeds),
        traces=c["traces"],
        duplicates=c["duplicates"],
        identified=c["identified"],
        no_content=c["no_content"],
        mention_free=c["mention_free"],
        mention_requests=c["mention_requests"],
        unclean=tuple(sorted(miner.unclean.items(), key=lambda kv: (-kv[1], kv[0]))),
        templates=len(miner.templates),
        clusters=stats["clusters"],
        below_min=stats["below_min"],
        below_min_requests=stats["below_min_requests"],
        sensitive=stats["sensitive"],
        sensitive_requests=stats["sensitive_requests"],
        personal=tuple(sorted(miner.personal.items())),
        cut=stats["cut"],
        redacted_away=stats["redacted_away"],
        covered_requests=stats["covered"],
        problems=tuple(miner.problems),
        skipped=c["skipped"],
        observed=miner.observer.groups(),
        ranges=miner.ranges.ranges(),
    )
