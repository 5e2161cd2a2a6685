"""Stage 5 — the evaluators' inputs: every command reads agent traces through ``readers``.

``readers.read_agent_traces_any`` is the entry point (span stores, span files, agent-trace JSONL,
fairtrace records → agent traces); ``readers.ingest_files`` loads span files into a store."""
