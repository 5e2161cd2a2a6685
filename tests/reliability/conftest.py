from __future__ import annotations

from typing import Any

from .corpus import TRIED


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if TRIED:
        terminalreporter.section("fuzz inputs tried")
        for name, count in sorted(TRIED.items()):
            terminalreporter.write_line(f"{name}: {count}")
        terminalreporter.write_line(f"total: {sum(TRIED.values())}")
