"""Stage 1, mining: trace logs → ``cases.jsonl`` (``spanguard cases build``).

:func:`.build.build_evalset` is the entry point: :mod:`.loader` reads the logs into rows,
:mod:`.signals` and :mod:`.feedback` score them, :mod:`.textnorm` (one level up),
:mod:`.dedup`, :mod:`.sparse_dedup` and :mod:`.select` cluster and choose them,
:mod:`.casebuild` turns a cluster into a case with the checks :mod:`.expect`,
:mod:`.annotations` and :mod:`.consistency` shape, and :mod:`.report` writes ``report.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...common.lazy import lazy_exports

if TYPE_CHECKING:
    from .build import build_evalset

__all__ = [
    "build_evalset",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "build_evalset": ".build",
    },
)
