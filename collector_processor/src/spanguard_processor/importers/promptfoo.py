"""promptfoo test files, configs and results → explicit suite variants.

Reads promptfoo's own formats: a test file (a YAML or JSON list of test cases, each with
``vars``, optional ``description``, ``assert`` and ``metadata``), a CSV test file (one column per
var; ``__``-prefixed columns such as ``__expected`` are promptfoo's and are skipped), or a
``promptfooconfig.yaml`` whose ``tests`` are inline or ``file://`` references and whose
``defaultTest.vars`` apply to every test. A var whose value is a list expands into one test per
value, as promptfoo does (the product, in list order).

A config's ``tests`` may be ``file://`` globs (``file://tests/*.yaml``), its ``defaultTest`` a
``file://`` path, and its ``scenarios`` (each ``config`` entry × each of its ``tests``) add
tests whose ``config`` vars are attributes. Its prompts (inline, ``file://`` text files, or
``file://`` chat-format JSON: a list of ``{role, content}`` messages) are rendered with the vars
(``{{ var }}``); with several prompts every test becomes one variant per prompt, with the
prompt's label in its id (``label/test``) and seed. A chat prompt's rendered messages are kept
in the variant's ``metadata.messages`` and its last user message is the prompt. Or the prompt
is the var named by ``prompt_var``. ``assert`` (with ``defaultTest``'s), ``description``,
``metadata`` and the prompt label are kept in the variant's ``metadata``.

The ``results.json`` that ``promptfoo eval -o`` writes is read too (see
:mod:`.promptfoo_results`).

Counterfactual attributes are the vars named in ``attributes``, or else the list-valued vars
(and scenario ``config`` vars). Tests that share a ``metadata.seed_id`` (or the value of
``seed_var``), or else the same values of every non-attribute var, form one seed.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spanguard.exceptions import InputError

from ..common._json import kind_of
from ._common import (
    ImportedVariant,
    check_unique,
    line_of,
    read_csv_rows,
    read_structured,
    scalar_text,
)
from ._promptfoo_common import kept, seed_of

__all__ = ["load_promptfoo"]

EXPECTED = (
    "a promptfoo test file (a list of test cases with 'vars'), a promptfoo config "
    "with 'tests' or 'scenarios', or the results.json of 'promptfoo eval -o'"
)
_VAR = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_NUNJUCKS = re.compile(r"\{\{|\{%|\{#")
Test = tuple[Path, int, Any, frozenset[str]]  # source file, index, test, scenario attributes


def _read_tests_file(path: Path) -> list[Any]:
    if path.suffix.lower() == ".csv":
        return _read_csv(path)
    data = read_structured(path, EXPECTED)
    if isinstance(data, Mapping) and "tests" in data:
        data = data["tests"]
    if not isinstance(data, list):
        raise InputError(f"the file holds {kind_of(data)}; expected {EXPECTED}.", file=str(path))
    return data


def _read_csv(path: Path) -> list[Any]:
    rows = read_csv_rows(path, EXPECTED)
    tests: list[Any] = []
    for row in rows:
        test: dict[str, Any] = {
            "vars": {k: v for k, v in row.items() if k and not k.startswith("__")}
        }
        if row.get("__description"):
            test["description"] = row["__description"]
        tests.append(test)
    return tests


def _file_ref(path: Path, ref: str, field: str) -> list[Path]:
    """The files a ``file://`` reference names (a glob matches several, sorted)."""
    pattern = ref.removeprefix("file://")
    if any(c in pattern for c in "*?["):
        found = sorted(p for p in path.parent.glob(pattern) if p.is_file())
        if not found:
            raise InputError(f"the glob {ref!r} matches no file.", file=str(path), field=field)
        return found
    return [path.parent / pattern]


def _default_test(path: Path, data: Mapping[str, Any]) -> Mapping[str, Any]:
    default = data.get("defaultTest") or {}
    if isinstance(default, str) and default.startswith("file://"):
        source = _file_ref(path, default, "defaultTest")[0]
        default = read_structured(source, "a promptfoo defaultTest (an object with 'vars')")
    if not isinstance(default, Mapping) or not isinstance(default.get("vars", {}), Mapping):
        raise InputError(
            "must be an object whose 'vars' is an object.",
            file=str(path),
            line=line_of(default),
            field="defaultTest",
        )
    return default


def _test_refs(path: Path, refs: object, field: str) -> list[Test]:
    out: list[Test] = []
    for ref in refs if isinstance(refs, list) else [refs]:
        if isinstance(ref, str):
            if not ref.startswith("file://"):
                raise InputError(
                    f"the tests reference {ref!r} is not supported; expected "
                    "inline tests or a file:// path (or glob) to YAML, JSON or "
                    "CSV files.",
                    file=str(path),
                    field=field,
                )
            for source in _file_ref(path, ref, field):
                out.extend(
                    (source, i, t, frozenset()) for i, t in enumerate(_read_tests_file(source))
                )
        else:
            out.append((path, len(out), ref, frozenset()))
    return out


def _scenario_tests(path: Path, scenarios: object) -> list[Test]:
    if not isinstance(scenarios, list):
        raise InputError(
            f"must be a list of scenarios, not {kind_of(scenarios)}.",
            file=str(path),
            field="scenarios",
        )
    out: list[Test] = []
    for s, scenario in enumerate(scenarios):
        where = f"scenarios[{s}]"
        if not isinstance(scenario, Mapping) or not isinstance(scenario.get("config"), list):
            raise InputError(
                "must be an object with a 'config' list and 'tests'.",
                file=str(path),
                line=line_of(scenario),
                field=where,
            )
        tests = _test_refs(path, scenario.get("tests") or [], f"{where}.tests")
        for c, entry in enumerate(scenario["config"]):
            if not isinstance(entry, Mapping) or not isinstance(entry.get("vars", {}), Mapping):
                raise InputError(
                    "must be an object whose 'vars' is an object.",
                    file=str(path),
                    line=line_of(entry),
                    field=f"{where}.config[{c}]",
                )
            attrs = frozenset(entry.get("vars", {}))
            for source, index, test, _ in tests:
                if not isinstance(test, Mapping):
                    out.append((source, index, test, attrs))
                    continue
                merged = {
                    **dict(entry),
                    **dict(test),
                    "vars": {**dict(entry.get("vars", {})), **dict(test.get("vars", {}))},
                }
                out.append((source, index, merged, attrs))
    return out


def _tests(path: Path, data: object) -> tuple[list[Test], Any, Mapping[str, Any]]:
    """The tests (with the vars their scenario makes attributes), the prompts and the
    default test."""
    if isinstance(data, list):
        return [(path, i, t, frozenset()) for i, t in enumerate(data)], None, {}
    if not isinstance(data, Mapping) or not ("tests" in data or "scenarios" in data):
        raise InputError(
            f"the file holds {kind_of(data)} without 'tests' or 'scenarios'; expected {EXPECTED}.",
            file=str(path),
        )
    default = _default_test(path, data)
    out = _test_refs(path, data.get("tests") or [], "tests")
    if "scenarios" in data:
        out.extend(_scenario_tests(path, data["scenarios"]))
    return out, data.get("prompts"), default


@dataclass(frozen=True)
class _Prompt:
    label: str | None
    text: str | None = None
    messages: tuple[Mapping[str, Any], ...] = ()


def _prompt_file(path: Path, ref: str, label: str | None) -> _Prompt:
    source = _file_ref(path, ref, "prompts")[0]
    if source.suffix.lower() == ".json":
        messages = read_structured(source, "a chat prompt (a JSON list of {role, content})")
        if not isinstance(messages, list) or not all(
            isinstance(m, Mapping) and isinstance(m.get("content"), str) for m in messages
        ):
            raise InputError(
                "must be a list of messages with 'role' and text 'content'.", file=str(source)
            )
        return _Prompt(label or source.stem, messages=tuple(messages))
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"the prompt file cannot be read ({exc}).", file=str(source)) from None
    return _Prompt(label or source.stem, text=text.rstrip("\n"))


def _prompts(path: Path, prompts: object) -> list[_Prompt]:
    if prompts is None:
        return []
    items = prompts if isinstance(prompts, list) else [prompts]
    out = []
    for i, item in enumerate(items):
        label = item.get("label") if isinstance(item, Mapping) else None
        text = (item.get("raw") or item.get("id")) if isinstance(item, Mapping) else item
        if not isinstance(text, str):
            raise InputError(
                "must be a prompt text, a file:// path or an object with 'raw' or 'id'.",
                file=str(path),
                field=f"prompts[{i}]",
            )
        if text.startswith("file://"):
            out.append(_prompt_file(path, text, label))
        else:
            out.append(_Prompt(label or (f"prompt-{i + 1}" if len(items) > 1 else None), text))
    for prompt in out:
        for part in [prompt.text or "", *(m["content"] for m in prompt.messages)]:
            if _NUNJUCKS.search(_VAR.sub("", part)):
                raise InputError(
                    "uses Nunjucks beyond plain {{ var }} substitutions; pass "
                    "`prompt_var` instead.",
                    file=str(path),
                    field="prompts",
                )
    return out


def _render(template: str, text: Mapping[str, str], file: str, line: int | None) -> str:
    missing = sorted(set(_VAR.findall(template)) - set(text))
    if missing:
        raise InputError(
            f"the prompt uses {{{{ {missing[0]} }}}} but this test has no such var.",
            file=file,
            line=line,
            field=f"vars.{missing[0]}",
        )
    return _VAR.sub(lambda m: text[m.group(1)], template)


def _rendered(
    prompt: _Prompt, text: Mapping[str, str], file: str, line: int | None
) -> tuple[str, dict[str, Any]]:
    """The prompt text and what goes into the variant's metadata."""
    meta: dict[str, Any] = {}
    if prompt.label is not None:
        meta["prompt_label"] = prompt.label
    if prompt.text is not None:
        return _render(prompt.text, text, file, line), meta
    messages = [
        {**dict(m), "content": _render(m["content"], text, file, line)} for m in prompt.messages
    ]
    meta["messages"] = messages
    users = [m["content"] for m in messages if m.get("role") == "user"]
    return (users[-1] if users else messages[-1]["content"]), meta


def _expand(vars_: Mapping[str, Any]) -> tuple[list[dict[str, Any]], set[str]]:
    listed = {k for k, v in vars_.items() if isinstance(v, list)}
    keys = list(vars_)
    values = [vars_[k] if k in listed else [vars_[k]] for k in keys]
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*values)], listed


Row = tuple[str, int | None, str, dict[str, Any], set[str], str | None, dict[str, Any]]


def _rows(tests: list[Test], default: Mapping[str, Any]) -> list[Row]:
    rows: list[Row] = []
    default_vars = dict(default.get("vars", {}))
    for source, index, test, scenario_attrs in tests:
        file, line, where = str(source), line_of(test), f"tests[{index}]"
        if not isinstance(test, Mapping):
            raise InputError(
                f"must be a test case object with 'vars', not {kind_of(test)}.",
                file=file,
                line=line,
                field=where,
            )
        vars_ = test.get("vars", {})
        metadata = test.get("metadata", {}) or {}
        if not isinstance(vars_, Mapping) or not isinstance(metadata, Mapping):
            raise InputError(
                "'vars' and 'metadata' must be objects.", file=file, line=line, field=where
            )
        ident = metadata.get("id", test.get("description"))
        base = str(ident) if ident not in (None, "") else f"test-{len(rows) + 1}"
        seed = metadata.get("seed_id")
        expanded, listed = _expand({**default_vars, **vars_})
        for k, combo in enumerate(expanded, start=1):
            suffix = f"::{k}" if len(expanded) > 1 else ""
            if scenario_attrs:
                suffix = "::" + ",".join(f"{a}={combo.get(a)}" for a in sorted(scenario_attrs))
            rows.append(
                (
                    base + suffix,
                    line,
                    file,
                    combo,
                    listed | set(scenario_attrs),
                    None if seed is None else str(seed),
                    kept(test, default),
                )
            )
    return rows


def load_promptfoo(
    path: Path,
    *,
    prompt_var: str | None = None,
    attributes: Sequence[str] = (),
    seed_var: str | None = None,
) -> list[ImportedVariant]:
    """The explicit variants of a promptfoo test file, config or results.json (see the
    module docstring); a results.json's variants carry their recorded ``response``."""
    data = (
        _read_tests_file(path) if path.suffix.lower() == ".csv" else read_structured(path, EXPECTED)
    )
    if isinstance(data, Mapping) and _is_results(data):
        from .promptfoo_results import load_results

        return load_results(path, data, attributes=attributes, seed_var=seed_var)
    tests, prompts, default = _tests(path, data)
    templates = [] if prompt_var else _prompts(path, prompts)
    if not templates and prompt_var is None:
        prompt_var = "prompt"
    rows = _rows(tests, default)
    chosen = set(attributes) or {k for row in rows for k in row[4]}
    variants: list[ImportedVariant] = []
    seeds: dict[tuple[tuple[str, str], ...], str] = {}
    for ident, line, file, combo, _, seed, meta in rows:
        text = {k: scalar_text(v, file, line, f"vars.{k}") for k, v in combo.items()}
        for key, value in text.items():
            if value.startswith("file://"):
                raise InputError(
                    "loads its value from a file, which this importer does not "
                    "do; inline the text in the test.",
                    file=file,
                    line=line,
                    field=f"vars.{key}",
                )
        seed = seed or seed_of(text, chosen, prompt_var, seed_var, seeds, file, line)
        assignments = {k: text[k] for k in sorted(chosen) if k in text}
        if not templates:
            assert prompt_var is not None
            if prompt_var not in text:
                raise InputError(
                    f"the test has no '{prompt_var}' var to use as the prompt; "
                    "pass `prompt_var` NAME, or import a config with prompts.",
                    file=file,
                    line=line,
                    field=f"vars.{prompt_var}",
                )
            variants.append(ImportedVariant(ident, seed, text[prompt_var], assignments, line, meta))
            continue
        several = len(templates) > 1
        for prompt in templates:
            rendered, extra = _rendered(prompt, text, file, line)
            variants.append(
                ImportedVariant(
                    f"{prompt.label}/{ident}" if several else ident,
                    f"{prompt.label}/{seed}" if several else seed,
                    rendered,
                    assignments,
                    line,
                    {**meta, **extra},
                )
            )
    check_unique(variants, str(path))
    return variants


def _is_results(data: object) -> bool:
    results = data.get("results") if isinstance(data, Mapping) else None
    return isinstance(results, Mapping) and isinstance(results.get("results"), list)
