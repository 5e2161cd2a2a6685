"""One mining run from its parameters: lexicons, redactor, miner and the suite file."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from spanguard import semconv
from spanguard.exceptions import ConfigError, InputError

from ..collector.redaction import load_hook
from ..fairness.metrics import get_metric, metric_names
from ..inputs.evaluation import RecordedTraces
from .lexicon import load_lexicon
from .metrics import mined_metrics
from .miner import MiningOptions, MiningResult, Redact, mine
from .personal import Scrubber, first_names
from .suitefile import write_suite
from .swap import LexiconSwapper

__all__ = ["MineRequest", "run_mining"]


@dataclass(frozen=True, slots=True)
class MineRequest:
    paths: tuple[Path, ...]
    lexicons: tuple[Path, ...] = ()
    attributes: tuple[str, ...] = ()
    min_users: int = 3
    max_seeds: int | None = None
    similarity: float = 0.8
    metrics: tuple[str, ...] = ()
    threshold: float = 0.1
    redact_hook: str | None = None
    #: agent traces read through an engine (``--source``), mined instead of ``paths``
    recorded: RecordedTraces | None = None


def _redactor(reference: str | None) -> Redact | None:
    if reference is None:
        return None
    hook = load_hook(reference)

    def redact(text: str) -> str | None:
        out = hook(semconv.INPUT_VALUE, text)
        if out is not None and not isinstance(out, str):
            raise InputError(
                f"the redaction hook {reference} returned {type(out).__name__}; "
                "it must return a string or None.",
                field="redact_hook",
            )
        return out

    return redact


def run_mining(request: MineRequest, output: Path) -> MiningResult:
    """Mine ``request.paths`` (each file once) and write the suite to ``output`` (not when no
    seed remains); raises :class:`InputError` for a bad lexicon or input and
    :class:`ConfigError` for an unknown attribute or metric, before anything is read or
    written."""
    lexicon = load_lexicon(request.lexicons)
    unknown = [a for a in request.attributes if a not in lexicon.names]
    if unknown:
        raise ConfigError(
            "attribute",
            f"unknown attribute '{unknown[0]}'; the lexicons define {', '.join(lexicon.names)}.",
        )
    for metric in request.metrics:
        if get_metric(metric) is None:
            raise ConfigError(
                "metric",
                f"unknown metric type '{metric}'; known types are {', '.join(metric_names())}.",
            )
    options = MiningOptions(
        request.min_users, request.max_seeds, request.similarity, _redactor(request.redact_hook)
    )
    # a file named twice is read once (and a trace in two inputs counts once, by trace id):
    # its requests counted twice could lift one user's template over --min-users
    paths = tuple({path.resolve(): path for path in request.paths}.values())
    swapper = LexiconSwapper(lexicon.only(request.attributes))
    # every first name the lexicons know is a name to scrub, unless it is the slot itself
    inputs = request.recorded if request.recorded is not None else paths
    result = mine(inputs, swapper, options, Scrubber(first_names(lexicon)))
    result = replace(
        result, metrics=mined_metrics(result.ranges, request.metrics, request.threshold)
    )
    if result.seeds:
        write_suite(output, result, result.metrics)
    return result
