"""Helpers every stage may use: the bounded JSON parser and writers (``jsonio``, ``_json``),
the one ``module:attr`` resolver (``references``), trace-link templates and chart ticks.

Nothing here knows about spans, traces or verdicts; it imports no other part of the processor."""

from __future__ import annotations

from .lazy import lazy_exports

__all__ = ["lazy_exports"]
