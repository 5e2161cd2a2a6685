"""Run ``spanguard serve`` as a real subprocess on free loopback ports (for integration tests)."""

from __future__ import annotations

import os
import re
import resource
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

_ANNOUNCE = re.compile(r"gRPC on 127\.0\.0\.1:(\d+), OTLP/HTTP on http://127\.0\.0\.1:(\d+)/")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServeProcess:
    """``spanguard serve --grpc-port 0 --http-port 0`` with its announced ports."""

    def __init__(self, store: Path, *extra: str, fd_limit: int | None = None) -> None:
        def lower_fd_limit() -> None:  # in the child, before it starts: a small process
            if fd_limit is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (fd_limit, fd_limit))

        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "spanguard_processor",
                "serve",
                "--store",
                str(store),
                "--grpc-port",
                "0",
                "--http-port",
                "0",
                *extra,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            preexec_fn=lower_fd_limit if fd_limit is not None else None,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        match = _ANNOUNCE.search(line)
        if match is None:
            self.proc.kill()
            raise AssertionError(f"serve did not start: {line!r} {self.proc.stderr.read()!r}")  # type: ignore[union-attr]
        self.grpc_port, self.http_port = int(match.group(1)), int(match.group(2))
        self.url = f"http://127.0.0.1:{self.http_port}"

    def wait_idle(self, spans: int, timeout: float = 30.0) -> dict[str, int]:
        """Wait until ``spans`` spans were received and nothing is in flight."""
        deadline = time.monotonic() + timeout
        health: dict[str, int] = {}
        while time.monotonic() < deadline:
            health = httpx.get(self.url + "/health").json()
            if health["spans_received"] >= spans and health["traces_in_flight"] == 0:
                return health
            time.sleep(0.1)
        raise AssertionError(f"the processor did not settle: {health}")

    def terminate(self) -> str:
        self.proc.send_signal(signal.SIGTERM)
        out, err = self.proc.communicate(timeout=30)
        assert self.proc.returncode == 0, err
        return out

    def kill(self) -> None:
        self.proc.kill()  # SIGKILL: no flush, no goodbye
        self.proc.communicate(timeout=30)
