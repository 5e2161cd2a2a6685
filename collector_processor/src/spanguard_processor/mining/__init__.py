"""Counterfactual fairness suites mined from production traffic (docs/suite-mining.md)."""
