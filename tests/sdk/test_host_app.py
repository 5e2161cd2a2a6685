"""No surprises in the host app: spanguard's bugs, settings, patches and signal handlers.

A library inside someone else's process must not change how that process behaves beyond what
it documents: its own bugs stay out of the app (and out of the app's test suite), the standard
``OTEL_BSP_*`` variables work, the thread-pool patch and the SIGTERM handler can be refused and
are taken out again, and a dropped field is logged once, not once per call.
"""

from __future__ import annotations

import contextvars
import logging
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import spanguard
from spanguard import ConfigError, semconv
from spanguard.testing import SpanCapture

ORIGINAL_SUBMIT = ThreadPoolExecutor.__dict__["submit"]


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "SPANGUARD_"))}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**clean, **env},
    )


FAILING_REDACTOR_APP = """
    import spanguard
    from spanguard.testing import capture_spans
    def bad(key, text):
        raise RuntimeError("redactor bug")
    @spanguard.tool
    def echo(x):
        return x
    with capture_spans(capture_content=True, redact=bad):
        print(echo("app result"))
"""


def test_a_spanguard_bug_does_not_break_the_apps_own_test_suite() -> None:
    # PYTEST_CURRENT_TEST is set in every user's test run: it must not turn strict mode on
    result = _python(FAILING_REDACTOR_APP, PYTEST_CURRENT_TEST="test_app.py::test_x (call)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "app result"
    assert "spanguard internal error in the redaction hook" in result.stderr


def test_strict_mode_is_an_explicit_switch() -> None:
    result = _python(FAILING_REDACTOR_APP, SPANGUARD_STRICT="1")
    assert result.returncode == 1
    assert "RuntimeError: redactor bug" in result.stderr


# --- OTEL_BSP_* -----------------------------------------------------------------------------
@pytest.fixture
def configured() -> Iterator[None]:
    yield
    spanguard.shutdown()


def test_standard_batch_variables_are_honoured(
    monkeypatch: pytest.MonkeyPatch, configured: None
) -> None:
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "300")
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "30")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "70")
    processor = spanguard.configure(
        exporter="memory", private=True, flush_on_sigterm=False, propagate_to_threads=False
    ).processor
    assert processor is not None
    assert (
        processor.max_queue_size,
        processor.max_export_batch_size,
        processor.schedule_delay_millis,
    ) == (300, 30, 70)


def test_arguments_override_the_batch_variables(
    monkeypatch: pytest.MonkeyPatch, configured: None
) -> None:
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "300")
    processor = spanguard.configure(
        exporter="memory",
        private=True,
        max_queue_size=5000,
        flush_on_sigterm=False,
        propagate_to_threads=False,
    ).processor
    assert processor is not None
    assert processor.max_queue_size == 5000
    assert processor.max_export_batch_size == 1024  # spanguard's default without a variable


def test_a_bad_batch_variable_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "lots")
    with pytest.raises(ConfigError, match=r"^OTEL_BSP_MAX_QUEUE_SIZE: "):
        spanguard.configure(exporter="memory", private=True)


class _HeldExporter(SpanExporter):
    """Exports only once released: a collector that hangs."""

    def __init__(self) -> None:
        self.exporting = threading.Event()
        self.release = threading.Event()
        self.returned = threading.Event()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.exporting.set()
        self.release.wait(10)
        self.returned.set()
        return SpanExportResult.SUCCESS


def test_a_hanging_export_on_reconfigure_holds_up_no_app_thread(configured: None) -> None:
    held = _HeldExporter()
    spanguard.configure(exporter=held, private=True, flush_on_sigterm=False)

    @spanguard.tool
    def step() -> int:
        return 1

    step()  # queued in the first pipeline, flushed when it is replaced
    replace = threading.Thread(
        target=spanguard.configure,
        kwargs={"exporter": "memory", "private": True, "flush_on_sigterm": False},
    )
    replace.start()
    try:
        assert held.exporting.wait(10)
        spanguard.escalate(reason=5)  # a wrong-typed field: the warn-once bookkeeping
        with SpanCapture() as capture:  # a private provider pushed, the thread pool patched
            step()
        # structure, not a latency: all of it ran while the export was still held
        still_held = not held.returned.is_set()
    finally:
        held.release.set()
        replace.join(10)
    assert still_held
    assert len(capture.spans()) == 1


# --- thread pools -----------------------------------------------------------------------------
def test_span_capture_puts_the_original_submit_back() -> None:
    with SpanCapture():
        assert ThreadPoolExecutor.__dict__["submit"] is not ORIGINAL_SUBMIT
        with SpanCapture():  # nested users: the patch stays until the last one leaves
            pass
        assert ThreadPoolExecutor.__dict__["submit"] is not ORIGINAL_SUBMIT
    assert ThreadPoolExecutor.__dict__["submit"] is ORIGINAL_SUBMIT


def test_configure_leaves_the_thread_pool_alone_unless_asked(configured: None) -> None:
    spanguard.configure(exporter="memory", private=True, flush_on_sigterm=False)
    assert ThreadPoolExecutor.__dict__["submit"] is ORIGINAL_SUBMIT


def test_configure_patches_only_when_asked_and_shutdown_restores(configured: None) -> None:
    spanguard.configure(
        exporter="memory", private=True, propagate_to_threads=False, flush_on_sigterm=False
    )
    assert ThreadPoolExecutor.__dict__["submit"] is ORIGINAL_SUBMIT
    spanguard.configure(
        exporter="memory", private=True, flush_on_sigterm=False, propagate_to_threads=True
    )
    assert ThreadPoolExecutor.__dict__["submit"] is not ORIGINAL_SUBMIT
    spanguard.shutdown()
    assert ThreadPoolExecutor.__dict__["submit"] is ORIGINAL_SUBMIT


@pytest.mark.parametrize(
    ("asked", "parented"), [({}, False), ({"propagate_to_threads": True}, True)]
)
def test_pool_tasks_keep_their_request_only_when_propagation_is_asked_for(
    configured: None, asked: dict[str, bool], parented: bool
) -> None:
    exporter = spanguard.configure(
        exporter="memory", private=True, flush_on_sigterm=False, **asked
    ).exporter
    assert isinstance(exporter, InMemorySpanExporter)

    @spanguard.tool
    def work() -> int:
        return 1

    with ThreadPoolExecutor(1) as pool, spanguard.request("agent"):
        assert pool.submit(work).result() == 1
    spanguard.force_flush()
    spans = {s.name: s for s in exporter.get_finished_spans()}
    tool, root = spans["execute_tool work"], spans["invoke_agent agent"]
    assert root.context is not None and tool.context is not None
    assert (tool.parent is not None and tool.parent.span_id == root.context.span_id) is parented
    assert (tool.context.trace_id == root.context.trace_id) is parented


APP_VAR: contextvars.ContextVar[str] = contextvars.ContextVar("app_var", default="unset")


def test_only_the_opentelemetry_context_goes_into_pool_tasks(capture: SpanCapture) -> None:
    @spanguard.tool
    def work() -> str:
        return APP_VAR.get()

    with ThreadPoolExecutor(1) as pool, spanguard.request("agent"):
        APP_VAR.set("set by the submitter")
        seen = pool.submit(work).result()
    assert seen == "unset"  # the app's own context variables behave as without spanguard
    tool, root = sorted(capture.spans(), key=lambda s: s["name"])
    assert tool["parent_span_id"] == root["span_id"]


# --- SIGTERM ----------------------------------------------------------------------------------
SIGTERM_STATE = """
    import signal, spanguard
    def state():
        return "default" if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL else "handler"
    spanguard.configure(exporter="memory"{args})
    print(state())
    spanguard.shutdown()
    print(state())
"""


def test_sigterm_flush_is_installed_by_default_and_removed_by_shutdown() -> None:
    result = _python(SIGTERM_STATE.format(args=""))
    assert result.stdout.split() == ["handler", "default"], result.stderr


def test_sigterm_flush_can_be_refused() -> None:
    result = _python(SIGTERM_STATE.format(args=", flush_on_sigterm=False"))
    assert result.stdout.split() == ["default", "default"], result.stderr


# --- warnings ---------------------------------------------------------------------------------
def test_dropped_fields_warn_once_per_place_and_field(
    capture: SpanCapture, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="spanguard")

    @spanguard.retrieval(source="kb")
    def search(query: str) -> list[dict[str, object]]:
        return [{"id": f"d{i}", "score": "high"} for i in range(5)]  # no group: optional

    for _ in range(100):
        search("q")
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 1, messages[:5]
    assert "documents[].score" in messages[0] and "retrieval 'kb'" in messages[0]
    assert len(capture.spans()) == 100
    assert '"group":null' in capture.spans()[0]["attributes"][semconv.GEN_AI_RETRIEVAL_DOCUMENTS]


def test_a_document_without_a_group_logs_nothing(
    capture: SpanCapture, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="spanguard")
    spanguard.record_documents([{"id": "a"}, {"id": "b", "rank": 2}], source="kb")
    assert caplog.records == []
