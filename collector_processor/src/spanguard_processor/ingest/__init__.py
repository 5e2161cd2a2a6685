"""Decoding OTLP trace payloads (protobuf and OTLP-JSON) and span files into encoded spans."""
