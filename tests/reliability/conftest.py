from __future__ import annotations

from typing import Any

from .corpus import FIGURES, TRIED


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if TRIED:
        terminalreporter.section("fuzz inputs tried")
        for name, count in sorted(TRIED.items()):
            terminalreporter.write_line(f"{name}: {count}")
        terminalreporter.write_line(f"total: {sum(TRIED.values())}")
    if FIGURES:
        terminalreporter.section("reliability figures")
        for line in FIGURES:
            terminalreporter.write_line(line)
