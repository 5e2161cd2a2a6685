from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from spanguard._runtime import reset_warnings

#: tests/timing.py names, at the end of a run, each test over the slow budget without a slow mark;
#: pytester runs that plugin in tests/test_timing.py.
pytest_plugins = ("tests.timing", "pytester")

# spanguard's own bugs are re-raised in its own test suite (and in the apps it starts), never
# in a user's: the switch is explicit, not keyed to PYTEST_CURRENT_TEST.
os.environ["SPANGUARD_STRICT"] = "1"

ROOT = Path(__file__).resolve().parents[1]
#: Published example data of the compatible tools (origin and licence in tests/data/README.md).
DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session")
def peer_fixtures() -> Path:
    return DATA


@pytest.fixture(autouse=True)
def _fresh_spanguard_warnings() -> Iterator[None]:
    """spanguard logs each dropped-field warning once per process; each test starts afresh."""
    reset_warnings()
    yield
