"""Mining a counterfactual suite from production traffic (docs/suite-mining.md).

One streaming pass over the traces keeps one entry per distinct *template* (the request with
each mention replaced by its attribute and each number by a value slot), never the requests
themselves: memory grows with the templates, not with the traffic. The templates are then
clustered with case mining's leader clustering (exact Jaccard over character bigrams, each
phrasing linked to its cluster's founder), so near-identical phrasings become one seed.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path
from typing import Any

from ..inputs.evaluation import Entry, RowFormat, read_evaluation_inputs
from ..regression.mine.dedup import leader_clusters
from ..regression.mine.loader import INPUT_ALIASES, OUTPUT_ALIASES
from ..regression.textnorm import detect_fallback, fold, shingles, slot_values
from .observe import ObservedGroup, Observer
from .swap import Detection, Mention, Swapper

__all__ = ["MAX_LISTED_TRACES", "MinedSeed", "MiningOptions", "MiningResult", "mine"]

#: A seed lists at most this many production trace ids (``requests`` stays exact).
MAX_LISTED_TRACES = 1000
#: A row's id: trace2eval's aliases with ``trace_id`` first, so a seed links to the trace a
#: viewer opens (``--trace-url``) when a row carries both.
_ID_KEYS = ("trace_id", "id", "traceId", "request_id", "requestId")
_MAX_PROBLEMS = 20
_DIGIT = re.compile(r"\d")

Redact = Callable[[str], "str | None"]


@dataclass(frozen=True, slots=True)
class MiningOptions:
    min_requests: int = 3
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
    # requests holding the seed text's numbers (all of them when the text holds none): under
    # --min-requests, the numbers are one user's values
    values_requests: int = 0


@dataclass(frozen=True, slots=True)
class MiningResult:
    seeds: tuple[MinedSeed, ...]
    traces: int = 0  # requests read
    no_content: int = 0  # recorded without content: nothing to mine
    mention_free: int = 0
    mention_requests: int = 0  # requests with a mention, clean or not
    unclean: tuple[tuple[str, int], ...] = ()  # why a mention could not be swapped → requests
    templates: int = 0  # distinct templates seen
    clusters: int = 0
    below_min: int = 0  # clusters under --min-requests
    below_min_requests: int = 0
    cut: int = 0  # clusters past --max-seeds
    redacted_away: int = 0
    covered_requests: int = 0
    problems: tuple[str, ...] = ()
    skipped: int = 0
    observed: tuple[ObservedGroup, ...] = ()

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
    same_values: int = 0  # requests whose numbers are the first request's


@dataclass
class _Request:
    id: str
    text: str | None
    output: str | None
    escalated: bool | None
    tools: int | None


def _pick(row: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((row[k] for k in keys if row.get(k) not in (None, "")), None)


def _request(entry: Entry) -> _Request | None:
    trace = entry.trace
    if trace is not None:
        return _Request(
            trace.trace_id,
            trace.input,
            trace.output,
            trace.trace.escalated,
            len(trace.trace.tool_calls),
        )
    if not isinstance(entry.row, dict):
        return None
    row = entry.row
    process = row.get("trace") if isinstance(row.get("trace"), dict) else None
    text = _pick(row, INPUT_ALIASES)
    output = _pick(row, OUTPUT_ALIASES)
    tools = process.get("tool_calls") if process else None
    return _Request(
        str(_pick(row, _ID_KEYS) or f"{entry.file}:{entry.line}"),
        str(text) if text is not None else None,
        str(output) if output is not None else None,
        bool(process.get("escalated")) if process else None,
        len(tools) if isinstance(tools, list) else None,
    )


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
    def __init__(self, swapper: Swapper, options: MiningOptions) -> None:
        self.swapper = swapper
        self.options = options
        self.templates: dict[str, _Template] = {}
        self.observer = Observer()
        self.counts: Counter[str] = Counter()
        self.unclean: Counter[str] = Counter()
        self.problems: list[str] = []

    def read(self, entries: Iterable[Entry]) -> None:
        for entry in entries:
            if entry.problem is not None:
                self.counts["skipped"] += 1
                if len(self.problems) < _MAX_PROBLEMS:
                    where = f"{entry.file}:{entry.line}"
                    field_ = f"field '{entry.field}': " if entry.field else ""
                    self.problems.append(f"{where}: {field_}{entry.problem}")
                continue
            request = _request(entry)
            if request is not None:
                self.add(request)

    def add(self, request: _Request) -> None:
        self.counts["traces"] += 1
        if request.text is None or not request.text.strip():
            self.counts["no_content"] += 1
            return
        detection: Detection = self.swapper.detect(request.text)
        if not detection.mentions:
            self.counts["mention_free"] += 1
            return
        self.counts["mention_requests"] += 1
        refused = detect_fallback(request.output) is not None if request.output else None
        self.observer.add(detection.mentions, request.escalated, request.tools, refused)
        if detection.unclean is not None:
            self.unclean[detection.unclean] += 1
            return
        text = masked(request.text, detection.mentions)
        key = slot_values(text)
        template = self.templates.get(key)
        if template is None:
            template = _Template(request.text, detection.mentions, detection.attributes, first=text)
            self.templates[key] = template
        template.requests += 1
        template.same_values += text == template.first
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


def _seed(miner: _Miner, keys: list[str], total: int) -> MinedSeed | None:
    members = [miner.templates[k] for k in keys]
    rep = members[0]
    redact = miner.options.redact
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
    template = display_template(rep.text, rep.mentions)
    requests = sum(t.requests for t in members)
    ids = [i for t in members for i in t.trace_ids][:MAX_LISTED_TRACES]
    observed: Counter[str] = Counter()
    for t in members:
        observed.update(t.observed)
    digest = hashlib.sha256(keys[0].encode("utf-8")).hexdigest()[:10]
    return MinedSeed(
        f"mined-{digest}",
        rep.attributes,
        template,
        tuple(variants),
        requests,
        requests / total if total else 0.0,
        len(keys),
        tuple(ids),
        tuple(sorted(observed.items())),
        members[0].same_values if _DIGIT.search(members[0].first) else requests,
    )


def _select(miner: _Miner) -> tuple[list[MinedSeed], Counter[str]]:
    opts, stats = miner.options, Counter[str]()
    total = miner.counts["traces"] - miner.counts["no_content"]
    seeds: list[MinedSeed] = []
    for keys in miner.clusters():
        stats["clusters"] += 1
        requests = sum(miner.templates[k].requests for k in keys)
        if requests < opts.min_requests:
            stats["below_min"] += 1
            stats["below_min_requests"] += requests
            continue
        if opts.max_seeds is not None and len(seeds) >= opts.max_seeds:
            stats["cut"] += 1
            continue
        seed = _seed(miner, keys, total)
        if seed is None:
            stats["redacted_away"] += 1
            continue
        seeds.append(seed)
        stats["covered"] += requests
    return seeds, stats


def mine(
    paths: Sequence[Path],
    swapper: Swapper,
    options: MiningOptions = MiningOptions(),
) -> MiningResult:
    """Mine ``paths`` (agent traces, trace2eval logs, span files, stores) in one pass."""
    miner = _Miner(swapper, options)
    miner.read(read_evaluation_inputs(list(paths), rows=RowFormat.TRACE2EVAL))
    seeds, stats = _select(miner)
    c = miner.counts
    return MiningResult(
        seeds=tuple(seeds),
        traces=c["traces"],
        no_content=c["no_content"],
        mention_free=c["mention_free"],
        mention_requests=c["mention_requests"],
        unclean=tuple(sorted(miner.unclean.items(), key=lambda kv: (-kv[1], kv[0]))),
        templates=len(miner.templates),
        clusters=stats["clusters"],
        below_min=stats["below_min"],
        below_min_requests=stats["below_min_requests"],
        cut=stats["cut"],
        redacted_away=stats["redacted_away"],
        covered_requests=stats["covered"],
        problems=tuple(miner.problems),
        skipped=c["skipped"],
        observed=miner.observer.groups(),
    )
