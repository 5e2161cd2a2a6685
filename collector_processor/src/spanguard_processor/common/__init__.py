"""Helpers every stage may use: the bounded JSON parser and writers (``jsonio``, ``_json``),
the one ``module:attr`` resolver (``references``), trace-link templates and chart ticks.

Nothing here knows about spans, traces or verdicts; it imports no other part of the processor."""
