"""ClickHouse's engine (chDB, in process) behind the part of ClickHouse's HTTP interface that a
collector's ClickHouse exporter uses, for tests: no ClickHouse server can be installed here.

Usage::

    with ClickHouseHttp() as clickhouse:       # otel.otel_traces made by the exporter's DDL
        ... point an exporter at clickhouse.endpoint ...
        clickhouse.wait_for_rows("otel_traces", n)
        rows = clickhouse.query("SELECT TraceId, SpanName FROM otel.otel_traces")

Each ``POST /?database=DB&query=INSERT INTO T (columns) FORMAT RowBinary`` (the body chunked,
uncompressed) is executed by the engine itself: the body is written to a file and inserted with
``INSERT INTO DB.T (columns) SELECT * FROM file(path, 'RowBinary', structure)``, the structure
being the table's own column types. Anything else is answered 400. The table is created from
``tests/data/clickhouse/otel_traces.sql`` (the exporter's DDL; origin and licence beside it).
"""

from __future__ import annotations

import http.server
import re
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = ["ClickHouseHttp"]

DDL = Path(__file__).resolve().parents[1] / "data" / "clickhouse" / "otel_traces.sql"
_INSERT = re.compile(r"INSERT INTO (\w+) \(([^)]*)\) FORMAT RowBinary")


class ClickHouseHttp:
    """A chDB session with the exporter's ``otel.otel_traces``, served over HTTP on 127.0.0.1."""

    def __init__(self) -> None:
        from chdb import session

        self._folder = tempfile.TemporaryDirectory()
        self._session = session.Session(str(Path(self._folder.name) / "db"))
        self._lock = threading.Lock()
        self.errors: list[str] = []
        self._session.query("CREATE DATABASE IF NOT EXISTS otel")
        self._session.query(DDL.read_text() % ("otel.otel_traces", "", "MergeTree()", ""))
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.endpoint = f"http://127.0.0.1:{self._server.server_port}"

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                params = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
                body = self._body()
                try:
                    owner._insert(params["database"][0], params["query"][0], body)
                except Exception as exc:  # answered as ClickHouse would: an error status
                    owner.errors.append(repr(exc))
                    self._answer(400, str(exc).encode())
                else:
                    self._answer(200, b"")

            def _body(self) -> bytes:
                if "chunked" not in self.headers.get("Transfer-Encoding", ""):
                    return self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = b""
                while size := int(self.rfile.readline().strip(), 16):
                    body += self.rfile.read(size)
                    self.rfile.readline()
                self.rfile.readline()
                return body

            def _answer(self, status: int, text: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Length", str(len(text)))
                self.end_headers()
                self.wfile.write(text)

            def log_message(self, *args: Any) -> None:
                pass

        return Handler

    def _insert(self, database: str, query: str, body: bytes) -> None:
        match = _INSERT.fullmatch(query)
        if match is None:
            raise ValueError(f"not an INSERT ... FORMAT RowBinary: {query[:200]}")
        table, columns = match.group(1), [c.strip() for c in match.group(2).split(",")]
        with self._lock, tempfile.NamedTemporaryFile(dir=self._folder.name) as data:
            data.write(body)
            data.flush()
            types = dict(
                line.split("\t", 1)
                for line in self._text(
                    f"SELECT name, type FROM system.columns "
                    f"WHERE database = '{database}' AND table = '{table}'"
                ).splitlines()
            )
            structure = ", ".join(f"`{c}` {types[c]}" for c in columns)
            names = ", ".join(f"`{c}`" for c in columns)
            self._session.query(
                f"INSERT INTO {database}.{table} ({names}) "
                f"SELECT * FROM file('{data.name}', 'RowBinary', '{structure}')"
            )

    def _text(self, sql: str) -> str:
        return bytes(self._session.query(sql, "TSV").bytes()).decode()

    def query(self, sql: str) -> list[list[str]]:
        """Rows of ``sql`` as lists of strings (TSV)."""
        with self._lock:
            text = self._text(sql)
        return [line.split("\t") for line in text.splitlines()]

    def wait_for_rows(self, table: str, count: int, timeout: float = 20.0) -> int:
        """Wait until ``otel.table`` holds ``count`` rows (or the timeout); the rows it holds."""
        deadline = time.monotonic() + timeout
        while True:
            held = int(self.query(f"SELECT count() FROM otel.{table}")[0][0])
            if held >= count or time.monotonic() > deadline:
                return held
            time.sleep(0.1)

    def __enter__(self) -> ClickHouseHttp:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._session.close()
        self._folder.cleanup()
