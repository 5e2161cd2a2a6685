"""Stage 4 — the running processor (``spanguard serve``).

``server.serve_forever`` is the entry point: the OTLP receivers (``grpc_server``,
``http_server``) hand each export to the ``ingestor``, which admits it (``limits``,
``connections``, ``security``), redacts it (``redaction``), commits it to the span store
(``spanguard_processor.store``) before acknowledging, and feeds the ``assembler`` that releases
whole traces. ``salvage`` checks and recovers damaged stores. Imports ``store``, ``traces``,
``ingest`` and ``common``."""
