"""Agent traces as Parquet: one row per agent trace, for DuckDB, Polars, Spark and ClickHouse.

The file is a sink that takes agent traces one at a time (:class:`ParquetSink`), so a caller
that streams traces writes in bounded memory: rows are buffered and written
:data:`ROW_GROUP_TRACES` at a time, one row group each, whatever batches the caller hands in —
the bytes depend on the traces alone. The columns (:data:`COLUMNS`, schema version
:data:`SCHEMA_VERSION`, documented in docs/scale.md) are the agent trace's fields, with the
process signals as typed columns and lists of structs: a reader needs no spanguard and no JSON
parser for anything the evaluators compare. Fields whose values are free-form JSON (feedback,
expectations, metadata, an evaluation's attributes) are JSON text columns (``*_json``).

Deterministic: identical traces give byte-identical files (fixed compression and level,
dictionary encoding, statistics, format version and data page version; the only key-value
metadata is the schema version and the Arrow schema, no timestamps). pyarrow is imported when a
sink is opened: without it, opening one raises an :class:`~spanguard.exceptions.InputError`
that says to install ``spanguard[warehouse]``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from spanguard.exceptions import InputError

from ..common.jsonio import dumps_line
from ..common.writes import AtomicOutput, WriteFailed
from .model import AgentTrace

__all__ = [
    "COLUMNS",
    "ROW_GROUP_TRACES",
    "SCHEMA_VERSION",
    "SCHEMA_VERSION_KEY",
    "WAREHOUSE_HINT",
    "ParquetSink",
    "arrow_schema",
    "trace_row",
]

#: bumped when a column is renamed, retyped or removed (adding a column keeps the version)
SCHEMA_VERSION = "1"
#: the file's key-value metadata key that holds :data:`SCHEMA_VERSION`
SCHEMA_VERSION_KEY = "spanguard.schema_version"
#: agent traces per row group (the last one holds the rest)
ROW_GROUP_TRACES = 8192
#: rows kept as Python objects before they become Arrow columns (bounds the sink's memory)
_CHUNK = 1024
WAREHOUSE_HINT = "pip install 'spanguard[warehouse]'"

_S, _I, _F, _B = "string", "int64", "double", "bool"
_TOOL = (("name", _S), ("id", _S), ("requested", _B))
_DOC = (("id", _S), ("group", _S), ("rank", _I), ("score", _F))
_LLM = (
    ("provider", _S),
    ("request_model", _S),
    ("response_model", _S),
    ("input_tokens", _I),
    ("output_tokens", _I),
    ("finish_reasons", [_S]),
    ("tool_calls", [_S]),
    ("duration_ms", _F),
    ("cost_usd", _F),
)
_UNREAD = (("key", _S), ("span", _S), ("count", _I))
_EVALUATION = (
    ("name", _S),
    ("score", _F),
    ("label", _S),
    ("explanation", _S),
    ("response_id", _S),
    ("span_id", _S),
    ("attributes_json", _S),
)

#: (column, type) in file order; a type is a name, ``[type]`` a list, a tuple of pairs a
#: struct, and ``{}`` a map of strings to strings
COLUMNS: tuple[tuple[str, Any], ...] = (
    ("trace_id", _S),
    ("request_id", _S),
    ("seed_id", _S),
    ("variant_id", _S),
    ("assignments", {}),
    ("repeat", _I),
    ("input", _S),
    ("output", _S),
    ("latency_ms", _F),
    ("cost_usd", _F),
    ("feedback_json", _S),
    ("retried", _B),
    ("expect_json", _S),
    ("metadata_json", _S),
    ("tool_calls", [_TOOL]),
    ("retrieved_documents", [_DOC]),
    ("plan_steps", [_S]),
    ("escalated", _B),
    ("escalation_reason", _S),
    ("friction_points", [_S]),
    ("partial", _B),
    ("source", [_S]),
    ("input_source", _S),
    ("output_source", _S),
    ("llm_calls", [_LLM]),
    ("usage_llm_calls", _I),
    ("usage_input_tokens", _I),
    ("usage_output_tokens", _I),
    ("usage_total_tokens", _I),
    ("usage_cost_usd", _F),
    ("usage_models", [_S]),
    ("unread", [_UNREAD]),
    ("evaluations", [_EVALUATION]),
    ("user_id", _S),
    ("session_id", _S),
    ("root_span_id", _S),
)


def _pyarrow() -> Any:
    try:
        import pyarrow as pa
        import pyarrow.parquet  # the writer lives in the submodule
    except ImportError:
        raise InputError(
            f"writing Parquet needs pyarrow, which is not installed; install it with: "
            f"{WAREHOUSE_HINT}"
        ) from None
    return pa


def _arrow_type(pa: Any, spec: Any) -> Any:
    if isinstance(spec, dict):
        return pa.map_(pa.string(), pa.string())
    if isinstance(spec, list):
        return pa.list_(_arrow_type(pa, spec[0]))
    if isinstance(spec, tuple):
        return pa.struct([pa.field(name, _arrow_type(pa, item)) for name, item in spec])
    return {"string": pa.string(), "int64": pa.int64(), "double": pa.float64(), "bool": pa.bool_()}[
        spec
    ]


def arrow_schema() -> Any:
    """The file's Arrow schema (``pyarrow.Schema``), with the schema version as metadata."""
    pa = _pyarrow()
    fields = [
        pa.field(name, _arrow_type(pa, spec), nullable=name != "trace_id") for name, spec in COLUMNS
    ]
    return pa.schema(fields, metadata={SCHEMA_VERSION_KEY: SCHEMA_VERSION})


def _json_text(value: Any) -> str | None:
    return None if value is None else dumps_line(value)


def _evaluation(item: Mapping[str, Any]) -> dict[str, Any]:
    row = {key: item[key] for key, _ in _EVALUATION if key != "attributes_json"}
    row["attributes_json"] = dumps_line(item["attributes"])
    return row


def trace_row(trace: AgentTrace) -> dict[str, Any]:
    """The row of one agent trace: :data:`COLUMNS` to plain values (pure; no pyarrow)."""
    data = trace.to_dict()
    process = data["trace"]
    usage = data.get("usage") or {}
    return {
        **{key: data[key] for key in ("trace_id", "request_id", "seed_id", "variant_id")},
        "assignments": list(data["assignments"].items()),
        **{key: data[key] for key in ("repeat", "input", "output", "latency_ms", "cost_usd")},
        "feedback_json": _json_text(data["feedback"]),
        "retried": data["retried"],
        "expect_json": _json_text(data["expect"]),
        "metadata_json": dumps_line(data["metadata"]),
        "tool_calls": [
            {"name": t["name"], "id": t.get("id"), "requested": t.get("requested", False)}
            for t in process["tool_calls"]
        ],
        **{key: process[key] for key in ("retrieved_documents", "plan_steps", "escalated")},
        **{key: process[key] for key in ("escalation_reason", "friction_points")},
        "partial": data["partial"],
        "source": data["source"],
        "input_source": data.get("input_source"),
        "output_source": data.get("output_source"),
        "llm_calls": data.get("llm_calls", []),
        "usage_llm_calls": len(trace.llm_calls),
        **{
            f"usage_{key}": usage.get(key)
            for key in ("input_tokens", "output_tokens", "total_tokens", "cost_usd")
        },
        "usage_models": usage.get("models", []),
        "unread": data.get("unread", []),
        "evaluations": [_evaluation(item) for item in data.get("evaluations", [])],
        **{key: data.get(key) for key in ("user_id", "session_id", "root_span_id")},
    }


class ParquetSink:
    """Agent traces into one Parquet file, written atomically when :meth:`close` is called.

    Use as a context manager: leaving the block normally closes the sink (if :meth:`close` was
    not called yet); leaving it by an exception leaves the target as it was.
    """

    def __init__(self, path: Path) -> None:
        pa = _pyarrow()
        self._pa = pa
        self._schema = arrow_schema()
        self._output = AtomicOutput(Path(path))
        try:
            self._writer = pa.parquet.ParquetWriter(
                str(self._output.temporary),
                self._schema,
                compression="zstd",
                compression_level=3,
                use_dictionary=True,
                write_statistics=True,
                version="2.6",
                data_page_version="1.0",
                store_schema=True,
            )
        except OSError as exc:
            self._output.abort()
            raise WriteFailed(path, exc) from None
        self._rows: list[dict[str, Any]] = []
        self._batches: list[Any] = []  # Arrow record batches of the row group being filled
        self._filled = 0
        self._closed = False
        self.count = 0

    def add(self, trace: AgentTrace) -> None:
        """Append one agent trace (written with its row group once that is full)."""
        self._rows.append(trace_row(trace))
        self.count += 1
        self._filled += 1
        if len(self._rows) >= _CHUNK:
            self._to_arrow()
        if self._filled >= ROW_GROUP_TRACES:
            self._flush()

    def add_many(self, traces: Iterable[AgentTrace]) -> None:
        for trace in traces:
            self.add(trace)

    def _to_arrow(self) -> None:
        if self._rows:
            self._batches.append(self._pa.RecordBatch.from_pylist(self._rows, schema=self._schema))
            self._rows = []

    def _flush(self) -> None:
        """Write the row group being filled (the batches and rows held), as one row group."""
        self._to_arrow()
        if self._batches:
            table = self._pa.Table.from_batches(self._batches, schema=self._schema)
            try:
                self._writer.write_table(table, row_group_size=ROW_GROUP_TRACES)
            except OSError as exc:  # no space left, an I/O error: a sentence, not a traceback
                raise WriteFailed(self._output.path, exc) from None
            self._batches, self._filled = [], 0

    def close(self) -> int:
        """Write what is buffered, finish the file, put it in place; the number of rows.
        Closing again does nothing."""
        if self._closed:
            return self.count
        self._closed = True
        self._flush()
        try:
            self._writer.close()
        except OSError as exc:
            raise WriteFailed(self._output.path, exc) from None
        self._output.commit()
        return self.count

    def abort(self) -> None:
        """Stop without touching the target (the temporary file is removed)."""
        self._closed = True
        self._writer.close()
        self._output.abort()

    def __enter__(self) -> ParquetSink:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if kind is not None:
            self.abort()
        elif not self._closed:
            self.close()
