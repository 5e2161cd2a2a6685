from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    path = SHARED / "fixtures"
    if not path.is_dir():
        pytest.fail(f"the shared fixtures folder {path} is missing; it sits beside the project")
    return path
