"""``spanguard demo``: an instrumented agent over real counterfactual data, end to end."""
