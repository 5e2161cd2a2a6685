from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Published example data of the compatible tools (origin and licence in tests/data/README.md).
DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session")
def peer_fixtures() -> Path:
    return DATA
