"""Stage 2, running: cases + candidate outputs or agent traces → a run result (``cases run``).

:func:`.run.run_cases` is the entry point: :mod:`.outputs` reads the candidate runs into typed
records, the checks (:mod:`..checks`) score each case, and :mod:`.results` holds what a run
file says.
"""
