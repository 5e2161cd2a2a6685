"""The pytest plugin behind the ``pytest11`` entry point: the ``spanguard_spans`` fixture."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .testing import SpanCapture


@pytest.fixture
def spanguard_spans() -> Iterator[SpanCapture]:
    """A started :class:`spanguard.testing.SpanCapture`; content capture stays as configured."""
    with SpanCapture() as capture:
        yield capture
