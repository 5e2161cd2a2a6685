"""The ``results.json`` that ``promptfoo eval -o results.json`` writes → variants with outputs.

The file is ``{evalId, results: {version, prompts, results: [row, ...]}, config, ...}``; each
row is one test case run with one prompt: ``testIdx``, ``promptIdx``, ``vars``, ``testCase``
(``description``, ``vars``, ``assert``, ``metadata``), ``prompt.raw`` (the rendered prompt, a
JSON list of messages for a chat prompt), ``provider.id`` and ``response.output``. Every row
becomes a variant whose prompt is the rendered prompt and whose ``response`` is the recorded
output, so ``spanguard fairness`` can evaluate the eval without calling a model again.

The counterfactual attributes are the ``attributes`` given, else the vars that are lists in the
config's ``tests`` or set by a scenario's ``config`` (promptfoo expands them into the rows).
Ids are ``description`` (or ``metadata.id``, else ``test-N``) plus the attribute values, e.g.
``refund timing::gender=woman``; with several prompts, prefixed by the prompt's label.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from spanguard.exceptions import InputError

from ..common._json import kind_of
from ._common import ImportedVariant, check_unique, scalar_text
from ._promptfoo_common import kept, seed_of

__all__ = ["load_results"]


def _config_attributes(config: Mapping[str, Any]) -> set[str]:
    found: set[str] = set()
    tests = config.get("tests")
    for test in tests if isinstance(tests, list) else []:
        if isinstance(test, Mapping) and isinstance(test.get("vars"), Mapping):
            found |= {k for k, v in test["vars"].items() if isinstance(v, list)}
    scenarios = config.get("scenarios")
    for scenario in scenarios if isinstance(scenarios, list) else []:
        entries = scenario.get("config") if isinstance(scenario, Mapping) else None
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, Mapping) and isinstance(entry.get("vars"), Mapping):
                found |= set(entry["vars"])
    return found


def _labels(results: Mapping[str, Any], config: Mapping[str, Any]) -> list[str]:
    """Each prompt's label as the config gave it (promptfoo's own result labels of file
    prompts append the path and the template), else as the results give it."""
    given = config.get("prompts")
    prompts = results.get("prompts")
    labels = []
    for i, prompt in enumerate(prompts if isinstance(prompts, list) else []):
        label = prompt.get("label") if isinstance(prompt, Mapping) else None
        if (
            isinstance(given, list)
            and i < len(given)
            and isinstance(given[i], Mapping)
            and isinstance(given[i].get("label"), str)
            and given[i]["label"]
        ):
            label = given[i]["label"]
        labels.append(label if isinstance(label, str) and label else f"prompt-{i + 1}")
    return labels


def _prompt(raw: object) -> tuple[str, list[Any] | None]:
    """The prompt text, and the messages when the rendered prompt is a chat (JSON list)."""
    if not isinstance(raw, str):
        return json.dumps(raw, ensure_ascii=False), None
    try:
        messages = json.loads(raw) if raw.lstrip().startswith("[") else None
    except ValueError:
        messages = None
    if (
        isinstance(messages, list)
        and messages
        and all(isinstance(m, Mapping) and isinstance(m.get("content"), str) for m in messages)
    ):
        users = [m["content"] for m in messages if m.get("role") == "user"]
        return (users[-1] if users else messages[-1]["content"]), messages
    return raw, None


def _output(row: Mapping[str, Any]) -> str | None:
    response = row.get("response")
    output = response.get("output") if isinstance(response, Mapping) else None
    if output is None:
        return None  # the provider failed for this row: no record, the variant stays
    return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)


def load_results(
    path: Path,
    data: Mapping[str, Any],
    *,
    attributes: Sequence[str] = (),
    seed_var: str | None = None,
) -> list[ImportedVariant]:
    """The variants (with recorded outputs) of a promptfoo results.json."""
    file = str(path)
    results = data["results"]
    rows = [r for r in results["results"] if isinstance(r, Mapping)]
    if len(rows) != len(results["results"]):
        raise InputError(
            "every entry of results.results must be an object (one test case run with one prompt).",
            file=file,
            field="results.results",
        )
    rows.sort(key=lambda r: (r.get("promptIdx", 0), r.get("testIdx", 0)))
    given = data.get("config")
    config: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    labels = _labels(results, config)
    chosen = set(attributes) or _config_attributes(config)
    if not chosen:
        raise InputError(
            "no counterfactual attribute found: no var is a list in "
            "config.tests and no scenario sets one; pass `attributes` NAME "
            "(e.g. `attributes` gender).",
            file=file,
            field="config.tests",
        )
    several = len({r.get("promptIdx", 0) for r in rows}) > 1
    seeds: dict[tuple[tuple[str, str], ...], str] = {}
    variants = []
    for number, row in enumerate(rows):
        where = f"results.results[{number}]"
        case = row.get("testCase")
        test: Mapping[str, Any] = case if isinstance(case, Mapping) else {}
        vars_ = row.get("vars", test.get("vars", {}))
        if not isinstance(vars_, Mapping):
            raise InputError(
                f"must be an object, not {kind_of(vars_)}.", file=file, field=f"{where}.vars"
            )
        text = {
            k: scalar_text(v, file, None, f"{where}.vars.{k}")
            for k, v in vars_.items()
            if k in chosen or isinstance(v, str | int | float | bool)
        }
        missing = sorted(chosen - set(text))
        if missing and attributes:
            raise InputError(
                f"the row has no '{missing[0]}' var (`attributes`).",
                file=file,
                field=f"{where}.vars.{missing[0]}",
            )
        found = test.get("metadata")
        meta_in: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        ident = meta_in.get("id", test.get("description"))
        base = str(ident) if ident not in (None, "") else f"test-{row.get('testIdx', number) + 1}"
        assignments = {k: text[k] for k in sorted(chosen) if k in text}
        base += "::" + ",".join(f"{k}={v}" for k, v in assignments.items())
        seed = meta_in.get("seed_id")
        seed = (
            str(seed)
            if seed is not None
            else seed_of(text, chosen, None, seed_var, seeds, file, None)
        )
        prompt, messages = _prompt((row.get("prompt") or {}).get("raw"))
        label = (
            labels[row.get("promptIdx", 0)]
            if row.get("promptIdx", 0) < len(labels)
            else f"prompt-{row.get('promptIdx', 0) + 1}"
        )
        meta = kept(test, {})
        meta["prompt_label"] = label
        if messages is not None:
            meta["messages"] = messages
        provider = row.get("provider")
        if isinstance(provider, Mapping) and provider.get("id"):
            meta["provider"] = provider["id"]
        if isinstance(row.get("success"), bool):
            meta["promptfoo_success"] = row["success"]
        variants.append(
            ImportedVariant(
                f"{label}/{base}" if several else base,
                f"{label}/{seed}" if several else seed,
                prompt,
                assignments,
                None,
                meta,
                _output(row),
            )
        )
    check_unique(variants, file)
    return variants
