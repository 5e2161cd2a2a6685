"""promptfoo test files → explicit suite variants.

Reads promptfoo's own formats: a test file (a YAML or JSON list of test cases, each with
``vars``, optional ``description``, ``assert`` and ``metadata``), a CSV test file (one column per
var; ``__``-prefixed columns such as ``__expected`` are promptfoo's and are skipped), or a
``promptfooconfig.yaml`` whose ``tests`` are inline or ``file://`` references and whose
``defaultTest.vars`` apply to every test. A var whose value is a list expands into one test per
value, as promptfoo does (the product, in list order).

The prompt is the config's single inline prompt rendered with the vars (``{{ var }}``), or the
var named by ``prompt_var``. Counterfactual attributes are the vars named in ``attributes``,
or else the list-valued vars. Tests that share a ``metadata.seed_id`` (or the value of
``seed_var``), or else the same values of every non-attribute var, form one seed.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from spanguard.exceptions import InputError

from ._common import (
    ImportedVariant,
    check_unique,
    line_of,
    read_csv_rows,
    read_structured,
    scalar_text,
)

__all__ = ["load_promptfoo"]

EXPECTED = ("a promptfoo test file (a list of test cases with 'vars') or a promptfoo config "
            "with 'tests'")
_VAR = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_NUNJUCKS = re.compile(r"\{\{|\{%|\{#")


def _read_tests_file(path: Path) -> list[Any]:
    if path.suffix.lower() == ".csv":
        return _read_csv(path)
    data = read_structured(path, EXPECTED)
    if isinstance(data, Mapping) and "tests" in data:
        data = data["tests"]
    if not isinstance(data, list):
        raise InputError(f"the file holds {type(data).__name__}; expected {EXPECTED}.",
                         file=str(path))
    return data


def _read_csv(path: Path) -> list[Any]:
    rows = read_csv_rows(path, EXPECTED)
    tests: list[Any] = []
    for row in rows:
        test: dict[str, Any] = {"vars": {k: v for k, v in row.items()
                                         if k and not k.startswith("__")}}
        if row.get("__description"):
            test["description"] = row["__description"]
        tests.append(test)
    return tests


def _tests(path: Path, data: Any) -> tuple[list[tuple[Path, int, Any]], Any, Mapping[str, Any]]:
    """(source file, index, test) triples, the prompts and the default vars."""
    if isinstance(data, list):
        return [(path, i, t) for i, t in enumerate(data)], None, {}
    if not isinstance(data, Mapping) or "tests" not in data:
        raise InputError(f"the file holds {type(data).__name__} without a 'tests' key; "
                         f"expected {EXPECTED}.", file=str(path))
    default = data.get("defaultTest") or {}
    if not isinstance(default, Mapping) or not isinstance(default.get("vars", {}), Mapping):
        raise InputError("must be an object whose 'vars' is an object.", file=str(path),
                         line=line_of(default), field="defaultTest")
    refs = data["tests"]
    out: list[tuple[Path, int, Any]] = []
    for ref in refs if isinstance(refs, list) else [refs]:
        if isinstance(ref, str):
            if not ref.startswith("file://"):
                raise InputError(f"the tests reference {ref!r} is not supported; expected "
                                 "inline tests or a file:// path to a YAML, JSON or CSV file.",
                                 file=str(path), field="tests")
            source = path.parent / ref.removeprefix("file://")
            out.extend((source, i, t) for i, t in enumerate(_read_tests_file(source)))
        else:
            out.append((path, len(out), ref))
    return out, data.get("prompts"), dict(default.get("vars", {}))


def _template(path: Path, prompts: Any) -> str | None:
    if prompts is None:
        return None
    items = prompts if isinstance(prompts, list) else [prompts]
    texts = [p.get("raw") if isinstance(p, Mapping) else p for p in items]
    if len(texts) != 1 or not isinstance(texts[0], str) or texts[0].startswith("file://"):
        raise InputError("needs exactly one inline prompt to render the tests with; for "
                         "several or file:// prompts, pass --prompt-var instead.",
                         file=str(path), field="prompts")
    template = texts[0]
    if _NUNJUCKS.search(_VAR.sub("", template)):
        raise InputError("uses Nunjucks beyond plain {{ var }} substitutions; pass "
                         "--prompt-var instead.", file=str(path), field="prompts")
    return template


def _expand(vars_: Mapping[str, Any]) -> tuple[list[dict[str, Any]], set[str]]:
    listed = {k for k, v in vars_.items() if isinstance(v, list)}
    keys = list(vars_)
    values = [vars_[k] if k in listed else [vars_[k]] for k in keys]
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*values)], listed


def load_promptfoo(path: Path, *, prompt_var: str | None = None,
                   attributes: Sequence[str] = (), seed_var: str | None = None
                   ) -> list[ImportedVariant]:
    """The explicit variants of a promptfoo test file or config (see the module docstring)."""
    data = _read_tests_file(path) if path.suffix.lower() == ".csv" else read_structured(
        path, EXPECTED)
    tests, prompts, default_vars = _tests(path, data)
    template = None if prompt_var else _template(path, prompts)
    if template is None and prompt_var is None:
        prompt_var = "prompt"
    rows: list[tuple[str, int | None, str, dict[str, Any], set[str], str | None]] = []
    for source, index, test in tests:
        file, line, where = str(source), line_of(test), f"tests[{index}]"
        if not isinstance(test, Mapping):
            raise InputError(f"must be a test case object with 'vars', not "
                             f"{type(test).__name__}.", file=file, line=line, field=where)
        vars_ = test.get("vars", {})
        metadata = test.get("metadata", {}) or {}
        if not isinstance(vars_, Mapping) or not isinstance(metadata, Mapping):
            raise InputError("'vars' and 'metadata' must be objects.", file=file, line=line,
                             field=where)
        ident = metadata.get("id", test.get("description"))
        base = str(ident) if ident not in (None, "") else f"test-{len(rows) + 1}"
        seed = metadata.get("seed_id")
        expanded, listed = _expand({**default_vars, **vars_})
        for k, combo in enumerate(expanded, start=1):
            suffix = f"::{k}" if len(expanded) > 1 else ""
            rows.append((base + suffix, line, file, combo, listed,
                         None if seed is None else str(seed)))
    chosen = set(attributes) or {k for row in rows for k in row[4]}
    variants: list[ImportedVariant] = []
    seeds: dict[tuple[tuple[str, str], ...], str] = {}
    for ident, line, file, combo, _, seed in rows:
        text = {k: scalar_text(v, file, line, f"vars.{k}") for k, v in combo.items()}
        for key, value in text.items():
            if value.startswith("file://"):
                raise InputError("loads its value from a file, which this importer does not "
                                 "do; inline the text in the test.", file=file, line=line,
                                 field=f"vars.{key}")
        if template is not None:
            missing = sorted(set(_VAR.findall(template)) - set(text))
            if missing:
                raise InputError(f"the prompt uses {{{{ {missing[0]} }}}} but this test has no "
                                 f"such var.", file=file, line=line, field=f"vars.{missing[0]}")
            prompt = _VAR.sub(lambda m, t=text: t[m.group(1)], template)  # type: ignore[misc]
        else:
            assert prompt_var is not None
            if prompt_var not in text:
                raise InputError(f"the test has no '{prompt_var}' var to use as the prompt; "
                                 "pass --prompt-var NAME, or import a config with one inline "
                                 "prompt.", file=file, line=line, field=f"vars.{prompt_var}")
            prompt = text[prompt_var]
        if seed is None and seed_var is not None:
            if seed_var not in text:
                raise InputError(f"the test has no '{seed_var}' var (--seed-var).", file=file,
                                 line=line, field=f"vars.{seed_var}")
            seed = text[seed_var]
        if seed is None:
            group = tuple(sorted((k, v) for k, v in text.items()
                               if k not in chosen and k != prompt_var))
            seed = seeds.setdefault(group, f"seed-{len(seeds) + 1}")
        assignments = {k: text[k] for k in sorted(chosen) if k in text}
        variants.append(ImportedVariant(ident, seed, prompt, assignments, line))
    check_unique(variants, str(path))
    return variants
