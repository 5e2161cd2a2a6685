"""Stage 2, running: cases + candidate outputs or agent traces → a run result (``cases run``).

:func:`.run.run_cases` (recorded traffic) and :func:`.run.score_repeats` (K runs per case, e.g.
a replay) are the entry points: :mod:`.outputs` reads the candidate runs into typed records,
the checks (:mod:`..checks`) score each case and each of its repeats (:mod:`.repeats`), and
:mod:`.results` holds what a run file says.
"""
