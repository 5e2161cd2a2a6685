"""What code built on the SDK uses to record spans as spanguard does: the processor's framework
adapters and ``spanguard run`` import these, never the SDK's private modules.

* :func:`active_tracer` — the tracer spanguard's spans go to now (``None`` when no SDK provider
  is set, and then nothing is recorded);
* :func:`now_ns` — spanguard's clock (:func:`spanguard.testing.use_clock` replaces it);
* :func:`otlp_json_line` — spans as one OTLP-JSON line, the Collector ``file`` exporter's format.
"""

from __future__ import annotations

from ._export import otlp_json_line
from ._runtime import active_tracer, now_ns

__all__ = ["active_tracer", "now_ns", "otlp_json_line"]
