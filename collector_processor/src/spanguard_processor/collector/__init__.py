"""Stage 4 — the running processor (``spanguard serve``) and the span store.

``server.serve_forever`` is the entry point: the OTLP receivers (``grpc_server``,
``http_server``) hand each export to the ``ingestor``, which admits it (``limits``,
``connections``, ``security``), redacts it (``redaction``), commits it to the SQLite ``store``
before acknowledging, and feeds the ``assembler`` that releases whole traces. ``salvage`` checks
and recovers damaged stores. Imports ``traces``, ``ingest`` and ``common``."""
