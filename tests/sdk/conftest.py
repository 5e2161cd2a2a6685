from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from spanguard.testing import SpanCapture


@pytest.fixture
def capture() -> Iterator[SpanCapture]:
    """Spans of the test, content capture off (the default)."""
    with SpanCapture(capture_content=False) as spans:
        yield spans


@pytest.fixture
def content_capture() -> Iterator[SpanCapture]:
    """Spans of the test with content capture on."""
    with SpanCapture(capture_content=True) as spans:
        yield spans


@pytest.fixture
def no_detach_errors(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Fail the test if OpenTelemetry logged "Failed to detach context"."""
    caplog.set_level(logging.ERROR, logger="opentelemetry.context")
    yield
    messages = [r.getMessage() for r in caplog.records if r.name.startswith("opentelemetry")]
    assert not [m for m in messages if "detach" in m.lower()], messages
