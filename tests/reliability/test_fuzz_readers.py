"""Fuzzing every file reader: span files, suite files, agent-trace and outputs JSONL.

Each input is written to a real file and read through the public reader; the only exception
allowed out is an :class:`InputError` whose message names the file. Inputs are either arbitrary
bytes or valid files with bytes flipped, inserted, deleted or cut (optionally gzip-compressed).
"""

from __future__ import annotations

import gzip
import json
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spanguard.exceptions import InputError
from spanguard_processor.fairness.design.suite import load_suite, parse_suite
from spanguard_processor.fairness.records import read_observations
from spanguard_processor.inputs.readers import iter_span_file, read_agent_traces_any
from spanguard_processor.regression.mine.loader import load_logs
from spanguard_processor.regression.run.outputs import load_outputs

from .corpus import OUTPUT_ROW, SUITE, TRIED, agent_trace_line, otlp_json_documents, otlp_requests
from .strategies import json_values, mutated_bytes, mutated_json

EXAMPLES = 120
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _length_prefixed(bodies: tuple[bytes, ...]) -> bytes:
    # the Collector file exporter's protobuf format: 4-byte big-endian length, then a message
    return b"".join(len(b).to_bytes(4, "big") + b for b in bodies)


SPAN_FILES = (
    "\n".join(otlp_json_documents()).encode() + b"\n",
    _length_prefixed(otlp_requests()),
    ("[" + ",".join(otlp_json_documents()) + "]").encode(),
)
TRACE_FILE = (agent_trace_line() + "\n").encode() * 2
OUTPUTS_FILE = (json.dumps(OUTPUT_ROW) + "\n").encode() * 2
SUITE_FILES = (json.dumps(SUITE).encode(),)


def _read_through(
    reader: Callable[[Path], Any], data: bytes, suffix: str = ".jsonl", compress: bool = False
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"input{suffix}"
        path.write_bytes(gzip.compress(data, mtime=0) if compress else data)
        try:
            result = reader(path)
            if isinstance(result, Iterator):
                for _ in result:
                    pass
        except InputError as exc:
            assert str(path) in str(exc), f"the message does not name the file: {exc}"


def _span_file(path: Path) -> None:
    for _ in iter_span_file(path):
        pass


@FUZZ
@given(mutated_bytes(SPAN_FILES), st.booleans())
def test_mutated_span_files_give_a_located_error_or_spans(data: bytes, compress: bool) -> None:
    TRIED["span files: mutated"] += 1
    _read_through(_span_file, data, compress=compress)


@FUZZ
@given(st.binary(max_size=400))
def test_random_bytes_as_a_span_file_give_a_located_error(data: bytes) -> None:
    TRIED["span files: random bytes"] += 1
    _read_through(_span_file, data)


@FUZZ
@given(mutated_bytes(SPAN_FILES))
def test_truncated_gzip_span_files_give_a_located_error(data: bytes) -> None:
    TRIED["span files: cut gzip"] += 1
    packed = gzip.compress(data, mtime=0)
    _read_through(_span_file, packed[: max(1, len(packed) * 2 // 3)])


@FUZZ
@given(mutated_bytes(SUITE_FILES), st.sampled_from([".json", ".yaml"]))
def test_mutated_suite_files_give_a_located_error(data: bytes, suffix: str) -> None:
    TRIED["suite files: mutated"] += 1
    _read_through(load_suite, data, suffix=suffix)


@pytest.mark.slow  # 120 examples, 4.0 s on a loaded run (load ~9), like the fuzz tests marked so
@FUZZ
@given(mutated_json((SUITE,)))
def test_mutated_suite_structures_give_a_suite_error(data: Any) -> None:
    TRIED["suite files: mutated structure"] += 1
    try:
        parse_suite(data, "suite.json")
    except InputError as exc:
        assert "suite.json" in str(exc)


@pytest.mark.slow
@FUZZ
@given(mutated_bytes((TRACE_FILE,)))
def test_mutated_agent_trace_jsonl_gives_a_located_error(data: bytes) -> None:
    TRIED["agent trace jsonl: mutated bytes"] += 1
    _read_through(lambda p: read_agent_traces_any([p]), data)


@pytest.mark.slow  # 120 examples through three readers, 3.5 s on a loaded run (load ~9)
@FUZZ
@given(mutated_json((json.loads(agent_trace_line()),)))
def test_mutated_agent_trace_records_give_a_located_error(record: Any) -> None:
    TRIED["agent trace jsonl: mutated records"] += 1
    data = json.dumps(record).encode() + b"\n"
    _read_through(lambda p: read_agent_traces_any([p]), data)
    _read_through(lambda p: read_observations([p]), data)
    _read_through(lambda p: load_logs([p]), data)


@FUZZ
@given(mutated_json((OUTPUT_ROW,)) | json_values)
def test_mutated_outputs_rows_give_a_located_error(row: Any) -> None:
    TRIED["outputs jsonl: mutated rows"] += 1
    data = json.dumps(row).encode() + b"\n"
    _read_through(load_outputs, data)
    _read_through(lambda p: load_logs([p]), data)
    _read_through(lambda p: read_observations([p]), data)


@FUZZ
@given(mutated_bytes((OUTPUTS_FILE, TRACE_FILE)))
def test_mutated_outputs_files_give_a_located_error(data: bytes) -> None:
    TRIED["outputs jsonl: mutated bytes"] += 1
    _read_through(load_outputs, data)
    _read_through(lambda p: load_logs([p]), data)


@pytest.mark.slow  # it counts the examples of the slow fuzz tests above: it runs with them
def test_every_reader_fuzz_test_tried_its_inputs() -> None:
    names = [
        n
        for n in TRIED
        if n.split(":")[0] in ("span files", "suite files", "agent trace jsonl", "outputs jsonl")
    ]
    assert len(names) == 9, names
    for name in names:
        assert TRIED[name] >= EXAMPLES * 0.9, (name, TRIED[name])
