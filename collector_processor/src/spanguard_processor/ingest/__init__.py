"""Stage 2 — bytes → span records: OTLP protobuf and OTLP-JSON payloads and span files.

``spans`` holds the span record types; ``batches.decode_batch`` is the entry point (one encoded
payload → a lazily decoded batch), with the format decoders in ``otlp_proto`` and ``otlp_json``.
This stage imports only ``common``."""
