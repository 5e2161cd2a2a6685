"""The check registry and the gate's rules: each check kind spelled once, each rule complete."""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

from spanguard_processor import regression
from spanguard_processor.regression.case import Evidence
from spanguard_processor.regression.checks import CheckFamily, CheckKind, check_type, check_types
from spanguard_processor.regression.gate.rules import RULES
from spanguard_processor.regression.run.results import CaseOutcome, Metrics
from spanguard_processor.traces.model import ProcessTrace

PACKAGE = Path(regression.__file__).parent


def _string_constants(path: Path) -> set[str]:
    """Every string literal of a module, docstrings left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    }


def test_each_check_kind_is_spelled_in_one_module() -> None:
    # "escalated" is also the name of a process-trace field, read where the process is read
    process_fields = {f.name for f in fields(ProcessTrace)}
    spelled: dict[str, list[str]] = {
        kind.value: [] for kind in CheckKind if kind.value not in process_fields
    }
    for path in sorted(PACKAGE.rglob("*.py")):
        constants = _string_constants(path)
        for kind, modules in spelled.items():
            if kind in constants:
                modules.append(path.relative_to(PACKAGE).as_posix())
    assert {kind: modules for kind, modules in spelled.items() if modules != ["checks.py"]} == {}


def test_every_check_kind_has_a_complete_check_type() -> None:
    evidence_fields = {f.name for f in fields(Evidence)}
    process_fields = {f.name for f in fields(ProcessTrace)}
    for kind in CheckKind:
        ct = check_type(f" {kind.value} ")
        assert ct is not None and ct.name == kind, kind
        if ct.family is CheckFamily.PROCESS:  # learned as properties (regression/mine/properties)
            assert ct.field in process_fields | {"output"} and ct.learn is None, kind
        if ct.family is CheckFamily.TIMING:
            assert ct.field in evidence_fields and ct.learn is not None, kind
            assert ct.rounding is not None and ct.signal is not None, kind
    assert {ct.name for ct in check_types()} == set(CheckKind)
    assert check_type("no_such_check") is None


def test_every_gate_rule_reads_a_run_figure() -> None:
    figures = {f.name for f in fields(Metrics)}
    per_case = {f.name for f in fields(CaseOutcome)}
    for rule in RULES:
        assert rule.metric in figures, rule.metric
        # a rate rule counts bad cases for McNemar's test; a timing rule resamples a per-case figure
        assert (rule.bad is None) == (rule.per_case is not None), rule.metric
        if rule.per_case is not None:
            assert rule.per_case in per_case and rule.statistic in {"p95", "mean"}, rule.metric
