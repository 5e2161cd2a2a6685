"""Counterfactual fairness suites mined from production traffic (docs/suite-mining.md).

Entry points: :func:`.run.run_mining` (one ``spanguard suite mine`` run: lexicons, redactor,
miner, suite file), :func:`.miner.mine` (the streaming pass over any traces with any
:class:`.swap.Swapper`), :func:`.lexicon.load_lexicon` and, for the fairness reports of a
mined suite, :mod:`.replay`.
"""
