"""Stage 5 — every command's inputs, one reader, each input's kind told by content.

``readers.read_agent_traces_any`` reads agent traces from span stores, span files and
agent-trace JSONL (``spanguard traces``); ``evaluation.read_evaluation_inputs`` is the
evaluators' entry point (the same, plus fairtrace records and trace2eval rows);
``files`` opens inputs and tells their kind; ``readers.ingest_files`` loads span files into a
store."""
