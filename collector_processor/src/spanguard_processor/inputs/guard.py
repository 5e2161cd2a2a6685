"""Every file a command reads passes here first: a regular file, of a bounded size, text where
text belongs, not empty, and of the kind the command wants — told from its content.

Each refusal is an :class:`~spanguard.exceptions.InputError` naming the file, what is wrong and
the limit, before a byte more than the first few KiB is read: a device that never ends
(``/dev/zero``), a 2 GiB file where a suite belongs or a NUL stream costs nothing.

The limits (and raising them) are :mod:`..common.limits`'s. What a file holds is told by the
one classifier of :mod:`.files` (:class:`~.files.FileKind`, :func:`~.files.row_kind`, the first
bytes through :func:`~.files.read_head`), which the readers' :class:`~.files.InputKind` is a
view of; this module adds what each command accepts.
"""

from __future__ import annotations

import re
import stat
import zlib
from dataclasses import dataclass
from pathlib import Path

from spanguard.exceptions import InputError, TraceFormatError

from ..common._json import parse_json
from ..common.limits import DOCUMENT_LIMIT_ENV, document_limit, size_text
from ..common.yamlio import MAX_YAML_BYTES
from ..store.schema import SQLITE_MAGIC, looks_like_store
from .files import GZIP_MAGIC, ZSTD_MAGIC, FileKind, framed_protobuf, read_head, row_kind

__all__ = [
    "CASES",
    "DOCUMENT",
    "EVALUATION",
    "EXPECTATIONS",
    "HISTORY",
    "IMPORT_SOURCE",
    "OUTPUTS",
    "REPORT",
    "RUN",
    "SPANS",
    "SUITE",
    "TRACES",
    "TRACE_LOG",
    "FileKind",
    "Slot",
    "check_input",
    "sniff",
]

_HEAD = 64 << 10  # what is read to tell a file's kind
_SNIFF_WHOLE = 16 << 20  # a pretty-printed JSON document up to this size is parsed to tell it


@dataclass(frozen=True)
class Slot:
    """An input of a command: what it reads (``wants``, for messages), which kinds it takes,
    and how it reads them."""

    wants: str
    accepts: frozenset[FileKind]
    whole: bool = False  # read whole (a size limit applies) rather than streamed
    binary: bool = False  # may be binary (a store, protobuf, compressed)
    directory: bool = False  # a folder stands for the files in it
    records: bool = True  # holds records: none at all is an error


_YAML_SUITE = re.compile(rb"^(dataset|metrics)\s*:", re.MULTILINE)


def _head(path: Path) -> bytes:
    try:
        return read_head(path, _HEAD)
    except (TraceFormatError, ValueError, zlib.error):
        return b""  # damaged compression: the reader names it


def sniff(path: Path, size: int | None = None) -> FileKind:
    """What ``path`` (a regular file) holds, judged by its first KiB and first record."""
    with path.open("rb") as raw:
        head = raw.read(_HEAD)
    magic = head[: len(SQLITE_MAGIC)]
    if magic.startswith(SQLITE_MAGIC):
        return FileKind.STORE
    if magic[:2] == GZIP_MAGIC or magic[:4] == ZSTD_MAGIC:
        head = _head(path)  # decompressed
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if not text:
        return FileKind.EMPTY if size is not None and size <= _HEAD else FileKind.UNKNOWN
    if text[:1] not in (b"{", b"["):
        if _YAML_SUITE.search(head):
            return FileKind.SUITE
        if looks_like_store(path, head):  # a store whose header is damaged: the reader says so
            return FileKind.STORE
        return FileKind.SPAN_FILE if framed_protobuf(head) else FileKind.UNKNOWN
    first, newline, _ = text.partition(b"\n")
    if newline or (size is not None and size <= _HEAD):
        try:
            return row_kind(parse_json(first))
        except ValueError:
            pass
    if size is not None and size <= _SNIFF_WHOLE and magic[:2] != GZIP_MAGIC:
        try:
            return row_kind(parse_json(path.read_bytes()))
        except ValueError:
            return FileKind.UNKNOWN
    return FileKind.UNKNOWN


def _file_type(mode: int) -> str:
    for test, name in (
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a named pipe"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def check_input(path: Path, slot: Slot, command: str) -> FileKind:
    """Refuse ``path`` for ``slot`` of ``command`` (e.g. ``cases run``) unless it is a regular
    file within the limits, text where text belongs, holding records, of a kind the slot
    takes. Returns the kind found (``UNKNOWN`` when the content says nothing: the reader then
    names the first problem by line and field)."""
    name = str(path)
    try:
        status = path.stat()
    except FileNotFoundError:
        raise InputError("does not exist.", file=name) from None
    except OSError as exc:
        raise InputError(f"cannot be read: {exc.strerror or exc}.", file=name) from None
    if stat.S_ISDIR(status.st_mode):
        if slot.directory:
            return FileKind.UNKNOWN
        raise InputError(f"is a directory; `{command}` wants {slot.wants} here.", file=name)
    if not stat.S_ISREG(status.st_mode):
        raise InputError(
            f"is {_file_type(status.st_mode)}, not a regular file; `{command}` "
            f"reads {slot.wants} from a file.",
            file=name,
        )
    if slot.whole and status.st_size > document_limit():
        raise InputError(
            f"is {size_text(status.st_size)}; {slot.wants} is read whole and may be at most "
            f"{size_text(document_limit())} (set {DOCUMENT_LIMIT_ENV} to raise the limit).",
            file=name,
        )
    if slot.whole and path.suffix.lower() in (".yaml", ".yml") and status.st_size > MAX_YAML_BYTES:
        raise InputError(
            f"is {size_text(status.st_size)}; YAML is read at most "
            f"{size_text(MAX_YAML_BYTES)} at a time (write a larger file as JSON).",
            file=name,
        )
    try:
        kind = sniff(path, status.st_size)
        with path.open("rb") as raw:
            start = raw.read(1024)
    except OSError as exc:
        raise InputError(f"cannot be read: {exc.strerror or exc}.", file=name) from None
    if kind is FileKind.EMPTY:
        if slot.records:
            raise InputError(
                f"no records in {name}: the file is empty; `{command}` wants {slot.wants} here."
            )
        return kind
    binary = (
        kind in (FileKind.STORE, FileKind.SPAN_FILE)
        or start[:2] == GZIP_MAGIC
        or start[:4] == ZSTD_MAGIC
    )
    # NUL in the first line: binary, not text (a NUL in a later line is that line's problem,
    # which a lenient reader skips)
    if b"\x00" in start.split(b"\n", 1)[0] and not (slot.binary and binary):
        offset = start.index(b"\x00")
        if slot.binary:
            raise InputError(
                f"no spans found in {name}: it holds binary data (a NUL byte at "
                f"byte {offset}) and is no span file, store or compressed file; "
                f"`{command}` wants {slot.wants} here."
            )
        raise InputError(
            f"holds binary data (a NUL byte at byte {offset}), not {slot.wants}; "
            "text inputs are UTF-8 (re-encode a UTF-16 file as UTF-8).",
            file=name,
        )
    if kind in (FileKind.UNKNOWN, *slot.accepts):
        return kind
    raise InputError(f"{name} is {kind.value}; `{command}` wants {slot.wants} here.")


_K = FileKind
#: The inputs of the commands, by what they read.
SPANS = Slot("a span file", frozenset({_K.SPAN_FILE}), binary=True)
TRACES = Slot(
    "agent traces, a span file or a store",
    frozenset({_K.AGENT_TRACES, _K.SPAN_FILE, _K.STORE}),
    binary=True,
    directory=True,
)
EVALUATION = Slot(
    "agent traces, fairtrace records or a span file",
    frozenset(
        {_K.AGENT_TRACES, _K.SPAN_FILE, _K.STORE, _K.RECORDS, _K.FAIRNESS_REPORT, _K.TRACE_LOG}
    ),
    binary=True,
    directory=True,
)
TRACE_LOG = Slot(
    "traces (a trace log, agent traces, a span file or a store)",
    frozenset({_K.TRACE_LOG, _K.AGENT_TRACES, _K.SPAN_FILE, _K.STORE, _K.OUTPUTS, _K.RECORDS}),
    binary=True,
)
CASES = Slot("a case set (from `cases build`)", frozenset({_K.CASE_SET}))
OUTPUTS = Slot(
    "outputs (JSON lines of {id, output})",
    frozenset({_K.OUTPUTS, _K.TRACE_LOG, _K.AGENT_TRACES, _K.RECORDS}),
)
# a fairness report is named by the run loader itself ("This looks like a fairness report")
RUN = Slot(
    "a run result (from `cases run -o`)", frozenset({_K.RUN_RESULT, _K.FAIRNESS_REPORT}), whole=True
)
SUITE = Slot("a fairness suite (JSON or YAML)", frozenset({_K.SUITE}), whole=True, records=False)
DOCUMENT = Slot("a JSON or YAML file", frozenset(), whole=True, records=False)
EXPECTATIONS = Slot("expectations (JSON lines)", frozenset(), records=False)
REPORT = Slot(
    "a fairness report (report.json, its folder or history.jsonl)",
    frozenset({_K.FAIRNESS_REPORT, _K.HISTORY}),
    whole=True,
    directory=True,
)
HISTORY = Slot("a fairness history (history.jsonl)", frozenset({_K.HISTORY}), whole=True)
IMPORT_SOURCE = Slot("a promptfoo or DeepEval file", frozenset(), whole=True)
