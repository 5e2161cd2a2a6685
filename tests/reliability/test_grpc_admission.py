"""gRPC admission before work: calls that open and never send their message, with or without
the bearer token, cannot keep well-formed exports from being answered (issue 37, finding 1)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import pytest

from .hostile import export_grpc, tiny_spans_request
from .servers import EXPORT, running

pytestmark = pytest.mark.integration

TOKEN = b"a-token-of-at-least-sixteen-characters"


class HangingCalls:
    """``count`` Export calls, each on its own connection, that send their headers and never
    their message; :meth:`codes` is how each ended (once the server ended it)."""

    def __init__(self, port: int, count: int, token: bytes | None) -> None:
        self._release = threading.Event()
        self._channels = [
            grpc.insecure_channel(
                f"127.0.0.1:{port}", options=[("grpc.use_local_subchannel_pool", 1)]
            )
            for _ in range(count)
        ]
        metadata = (("authorization", f"Bearer {token.decode()}"),) if token else None
        self._calls = [
            channel.stream_unary(EXPORT).future(self._never(), timeout=60, metadata=metadata)
            for channel in self._channels
        ]

    def _never(self) -> Iterator[bytes]:
        self._release.wait(60)
        return
        yield b""  # a generator that sends nothing until released

    def codes(self, timeout: float) -> list[str]:
        ended = []
        for call in self._calls:
            try:
                call.result(timeout=timeout)
                ended.append("OK")
            except grpc.FutureTimeoutError:
                ended.append("still hanging")
            except grpc.RpcError as exc:
                ended.append(exc.code().name)
        return ended

    def close(self) -> None:
        self._release.set()
        for call in self._calls:
            call.cancel()
        for channel in self._channels:
            channel.close()


@pytest.mark.slow  # the hanging calls end at grpc_read_timeout (3 s): 3.1-3.2 s each, loaded
@pytest.mark.parametrize("hanging", [8, 64])
@pytest.mark.parametrize("token", [None, TOKEN], ids=["no-token", "token"])
def test_hanging_grpc_calls_never_starve_well_formed_exports(
    tmp_path: Path, hanging: int, token: bytes | None
) -> None:
    from spanguard_processor.collector.security import Security

    body = tiny_spans_request(5, seed=1)
    with running(tmp_path / "s.db", security=Security(token), grpc_read_timeout=3.0) as server:
        assert server.grpc_port is not None
        calls = HangingCalls(server.grpc_port, hanging, token)
        try:
            time.sleep(0.5)  # every hanging call is in
            metadata = (("authorization", f"Bearer {token.decode()}"),) if token else None
            with grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
                answers = []
                for _ in range(5):
                    start = time.monotonic()
                    with contextlib.suppress(grpc.RpcError):
                        channel.unary_unary(EXPORT)(body, timeout=5, metadata=metadata)
                        answers.append(time.monotonic() - start)
            health = httpx.get(f"http://127.0.0.1:{server.http_port}/health", timeout=5)
            # structure, not a latency: every export was answered before the server ended any
            # hanging call for its missing message (after grpc_read_timeout), so none waited
            # for a hanging call to be cleared out of its way
            ended = [call for call in calls._calls if call.done()]
            timed_out = [c for c in ended if c.code() == grpc.StatusCode.DEADLINE_EXCEEDED]
            assert len(answers) == 5, "a well-formed export failed while calls hung"
            assert not timed_out, (len(timed_out), answers)
            assert health.status_code == 200
            # the hanging calls are ended by the server: deadline exceeded (or too many on one
            # connection), never left to hold anything
            assert set(calls.codes(timeout=10)) <= {"DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED"}
        finally:
            calls.close()


def test_a_call_without_the_token_is_refused_before_its_message_is_read(tmp_path: Path) -> None:
    from spanguard_processor.collector.security import Security

    with running(tmp_path / "s.db", security=Security(TOKEN)) as server:
        assert server.grpc_port is not None
        calls = HangingCalls(server.grpc_port, 3, None)
        try:
            # refused for the token, not ended for the message it never sent (that would be
            # DEADLINE_EXCEEDED after grpc_read_timeout)
            assert calls.codes(timeout=30) == ["UNAUTHENTICATED"] * 3
        finally:
            calls.close()


def test_calls_beyond_the_per_connection_cap_are_resource_exhausted(tmp_path: Path) -> None:
    with running(tmp_path / "s.db", grpc_read_timeout=5.0, grpc_calls_per_connection=4) as server:
        assert server.grpc_port is not None
        with grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
            release = threading.Event()

            def never() -> Iterator[bytes]:
                release.wait(30)
                return
                yield b""

            hanging = [channel.stream_unary(EXPORT).future(never(), timeout=30) for _ in range(4)]
            time.sleep(0.3)
            code, seconds = export_grpc(channel, tiny_spans_request(2, seed=2), timeout=5)
            release.set()
            for call in hanging:
                call.cancel()
        # refused while the four calls hang (queued, it would have been answered OK once
        # they were ended after grpc_read_timeout)
        assert code == "RESOURCE_EXHAUSTED", seconds
        # another connection is not held back by this one's calls
        with grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as other:
            assert export_grpc(other, tiny_spans_request(2, seed=3), timeout=5)[0] == "OK"
