"""Where DuckDB's SQL and ClickHouse's differ, for the one SQL map (``agent_map.sql``).

The map is written once with ``@macro(arg; arg)`` calls; :func:`expand` replaces each by the
dialect's spelling (innermost first, arguments split on ``;`` outside quotes and brackets).
Everything else in the template is SQL both engines read alike. DuckDB reads the exporter's
columns from Parquet (nested columns flattened: ``"Events.Name"``), ClickHouse from the table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

__all__ = ["CLICKHOUSE", "DUCKDB", "Dialect", "expand"]

Macro = Callable[..., str]


@dataclass(frozen=True, slots=True)
class Dialect:
    """One engine's spelling of each macro of the map (``name(args) -> SQL``)."""

    name: str
    macros: Mapping[str, Macro]


def _bar(literal: str) -> str:
    """A quoted prefix ``'p'`` as the key-list needle ``'|p'``."""
    return "'|" + literal[1:]


DUCKDB = Dialect(
    "duckdb",
    {
        "ns": lambda col: f"epoch_ns({col})",
        "ns_list": lambda col: f"list_transform({col}, lambda t: epoch_ns(t))",
        "since": lambda col, n: f"epoch_ns({col}) >= {n}",
        "until": lambda col, n: f"epoch_ns({col}) < {n}",
        "val": lambda m, k: f"COALESCE(map_extract_value({m}, {k}), '')",
        "get": lambda m, k: f"map_extract_value({m}, {k})",
        "has": lambda m, k: f"map_contains({m}, {k})",
        "keystr": lambda m: f"array_to_string(map_keys({m}), '|')",
        "prefix": lambda k, p: f"contains({k}, {_bar(p)})",
        "like": lambda k, s: f"contains({k}, {s})",
        "pick": lambda m, p: (
            f"to_json(map_from_entries(list_filter(map_entries({m}), "
            f"lambda e: starts_with(e.key, {p}))))"
        ),
        "keys": lambda m, *ks: (
            f"to_json(map_from_entries(list_filter(map_entries({m}), "
            f"lambda e: e.key IN ({', '.join(ks)}))))"
        ),
        "label": lambda m, p: (
            "array_to_string(list_transform(list_sort(list_transform(list_filter("
            f"map_entries({m}), lambda e: starts_with(e.key, {p})), lambda e: "
            f"{{'k': substring(e.key, length({p}) + 1), 'v': e.value}})), "
            "lambda x: x.k || '=' || x.v), ', ')"
        ),
        "jlen": lambda x: f"COALESCE(json_array_length({x}), 0)",
        "trim": lambda x: f"trim({x})",
        "starts": lambda x, p: f"starts_with({x}, {p})",
        "contains": lambda x, s: f"contains({x}, {s})",
        "digits": lambda x: f"regexp_full_match({x}, '[0-9]+')",
        "int": lambda x: f"TRY_CAST({x} AS BIGINT)",
        "float": lambda x: f"TRY_CAST({x} AS DOUBLE)",
        # a BLOB that sorts as the tuple does (compared as bytes: cheaper than a struct)
        "key": lambda *xs: (
            "create_sort_key(" + ", ".join(f"{x}, 'ASC NULLS LAST'" for x in xs) + ")"
        ),
        "but": lambda t, cols: f"{t}.* EXCLUDE ({cols})",
        "ids": lambda x: f"list({x})",
        "distinct_n": lambda x: f"length(list_distinct({x}))",
        "spans": lambda p, a, s, i, r: (
            f"list({{'p': {p}, 'a': {a}, 's': {s}, 'i': {i}, 'r': {r}}})"
        ),
        "root": lambda sp, ids: (
            f"list_sort(list_transform({sp}, lambda t: {{'c': list_contains({ids}, t.p), "
            "'a': t.a, 's': t.s, 'i': t.i, 'p': t.p, 'r': t.r}))[1]"
        ),
        "field": lambda x, name: f"{x}.{name}",
        "first": lambda x, o, c: f"arg_min({x}, {o}) FILTER (WHERE {c})",
        "list": lambda x, o, c: f"to_json(list({x} ORDER BY {o}) FILTER (WHERE {c}))",
        "events": lambda src: (
            "SELECT gid, sid, epoch_ns(et0) AS et, en, ea, ei FROM (SELECT gid, sid, "
            "unnest(ev_t) AS et0, unnest(ev_n) AS en, unnest(ev_a) AS ea, "
            f"unnest(generate_series(1, len(ev_n))) AS ei FROM {src}) AS u"
        ),
        "settings": lambda: "",
        "inline": lambda: "NOT MATERIALIZED",
    },
)

CLICKHOUSE = Dialect(
    "clickhouse",
    {
        "ns": lambda col: f"toUnixTimestamp64Nano({col})",
        "ns_list": lambda col: f"arrayMap(t -> toUnixTimestamp64Nano(t), {col})",
        "since": lambda col, n: f"{col} >= fromUnixTimestamp64Nano(toInt64({n}))",
        "until": lambda col, n: f"{col} < fromUnixTimestamp64Nano(toInt64({n}))",
        "val": lambda m, k: f"{m}[{k}]",
        "get": lambda m, k: f"if(mapContains({m}, {k}), {m}[{k}], NULL)",
        "has": lambda m, k: f"mapContains({m}, {k})",
        "keystr": lambda m: f"arrayStringConcat(mapKeys({m}), '|')",
        "prefix": lambda k, p: f"(position({k}, {_bar(p)}) > 0)",
        "like": lambda k, s: f"(position({k}, {s}) > 0)",
        "pick": lambda m, p: f"toJSONString(mapFilter((k, v) -> startsWith(k, {p}), {m}))",
        "keys": lambda m, *ks: f"toJSONString(mapFilter((k, v) -> k IN ({', '.join(ks)}), {m}))",
        "label": lambda m, p: (
            "arrayStringConcat(arrayMap(t -> concat(t.1, '=', t.2), arraySort(arrayMap("
            f"t -> (substring(t.1, length({p}) + 1), t.2), arrayFilter(t -> startsWith(t.1, "
            f"{p}), arrayZip(mapKeys({m}), mapValues({m})))))), ', ')"
        ),
        "jlen": lambda x: f"JSONLength(COALESCE({x}, '[]'))",
        "trim": lambda x: f"trimBoth({x})",
        "starts": lambda x, p: f"startsWith({x}, {p})",
        "contains": lambda x, s: f"(position({x}, {s}) > 0)",
        "digits": lambda x: f"match({x}, '^[0-9]+$')",
        "int": lambda x: f"toInt64OrNull({x})",
        "float": lambda x: f"toFloat64OrNull({x})",
        "key": lambda *xs: f"tuple({', '.join(xs)})",
        "but": lambda t, cols: f"{t}.* EXCEPT ({cols})",
        "ids": lambda x: f"groupArray({x})",
        "distinct_n": lambda x: f"length(arrayDistinct({x}))",
        "spans": lambda p, a, s, i, r: f"groupArray(tuple({p}, {a}, {s}, {i}, {r}))",
        "root": lambda sp, ids: (
            f"arraySort(arrayMap(t -> tuple(has({ids}, t.1), t.2, t.3, t.4, t.1, t.5), {sp}))[1]"
        ),
        "field": lambda x, name: f"tupleElement({x}, {'casipr'.index(name) + 1})",
        "first": lambda x, o, c: f"argMinIf({x}, {o}, {c})",
        "list": lambda x, o, c: (
            f"toJSONString(arrayMap(t -> t.2, arraySort(t -> t.1, groupArrayIf(({o}, {x}), {c}))))"
        ),
        "events": lambda src: (
            f"SELECT gid, sid, toUnixTimestamp64Nano(et0) AS et, en, ea, ei FROM {src} "
            "ARRAY JOIN ev_t AS et0, ev_n AS en, ev_a AS ea, arrayEnumerate(ev_n) AS ei"
        ),
        "settings": lambda: "SETTINGS join_use_nulls = 1",
        "inline": lambda: "",
    },
)

#: macros written in other macros, the same for both engines
_SHARED: dict[str, Callable[..., str]] = {
    "nonblank": lambda m, k: f"CASE WHEN @trim(@val({m}; {k})) <> '' THEN @val({m}; {k}) END",
}


def _split(args: str) -> list[str]:
    """Top-level ``;``-separated arguments (quotes and brackets respected)."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(args):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == ";" and depth == 0:
            parts.append(args[start:i].strip())
            start = i + 1
    tail = args[start:].strip()
    return [*parts, tail] if tail or parts else []


def _close(text: str, open_at: int) -> int:
    """The index of the bracket closing the one at ``open_at``."""
    depth, quote = 0, ""
    for i in range(open_at, len(text)):
        ch = text[i]
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError(f"unbalanced macro call at {text[open_at - 20 : open_at + 20]!r}")


def expand(template: str, dialect: Dialect, extra: Mapping[str, Macro]) -> str:
    """``template`` with every ``@name(args)`` replaced in ``dialect`` (``extra``: the
    macros of one query, such as ``source`` and ``window``)."""
    macros = {**_SHARED, **dialect.macros, **extra}
    out, i = [], 0
    while (at := template.find("@", i)) >= 0:
        end = at + 1
        while end < len(template) and (template[end].isalnum() or template[end] == "_"):
            end += 1
        name = template[at + 1 : end]
        if name not in macros or end >= len(template) or template[end] != "(":
            out.append(template[i:end])
            i = end
            continue
        close = _close(template, end)
        args = [expand(arg, dialect, extra) for arg in _split(template[end + 1 : close])]
        out.append(template[i:at])
        out.append(expand(macros[name](*args), dialect, extra))
        i = close + 1
    out.append(template[i:])
    return "".join(out)
