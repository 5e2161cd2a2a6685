"""One style of entry point: the processor reaches the SDK through its public modules only."""

from __future__ import annotations

from .test_architecture import PACKAGES, SOURCES, import_graph


def test_the_processor_imports_no_private_sdk_module() -> None:
    graph = import_graph(SOURCES, PACKAGES)
    private = [
        f"{module} → {target} ({where})"
        for module, edges in sorted(graph.items())
        if module.startswith("spanguard_processor")
        for target, where in sorted(edges.items())
        if target.startswith("spanguard.") and any(p.startswith("_") for p in target.split("."))
    ]
    assert private == [], "\n".join(private)
