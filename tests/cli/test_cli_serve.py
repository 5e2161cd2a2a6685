"""``spanguard serve`` refuses bad settings with exit code 2 and a message naming the option."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanguard_processor.cli import cli
from spanguard_processor.collector.server import (
    ProcessorServer,
    ReceiverFailed,
    ServerConfig,
    serve_forever,
)
from tests.reliability.servers import self_signed_certificate


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--grpc-port", "-1", "--http-port", "-1"], "--grpc-port: both receivers are disabled"),
        (["--num-traces", "0"], "--num-traces: must be at least 1."),
        (["--wait-duration", "-1"], "--wait-duration: must not be negative."),
        (["--http-port", "70000"], "--http-port: 70000 is not a TCP port"),
    ],
)
def test_bad_settings_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, ["serve", "--store", str(tmp_path / "s.db"), *args])
    assert result.exit_code == 2
    assert f"Error: {message}" in result.output


@pytest.mark.integration
def test_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = CliRunner().invoke(
            cli,
            [
                "serve",
                "--store",
                str(tmp_path / "s.db"),
                "--grpc-port",
                "-1",
                "--http-port",
                str(port),
            ],
        )
    assert result.exit_code == 2
    assert f"--http-port: {port} on 127.0.0.1 is in use" in result.output


@pytest.mark.parametrize("receivers", [[], ["--grpc-port", "-1"], ["--http-port", "-1"]])
def test_a_file_that_is_not_a_certificate_is_a_clear_error(
    tmp_path: Path, receivers: list[str]
) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.write_text("not a certificate\n")
    key.write_text("not a key\n")
    result = CliRunner().invoke(
        cli,
        [
            "serve",
            "--store",
            str(tmp_path / "s.db"),
            "--grpc-port",
            "0",
            "--http-port",
            "0",
            *receivers,
            "--tls-cert",
            str(cert),
            "--tls-key",
            str(key),
        ],
    )
    assert result.exit_code == 2, result.output
    assert (
        f"Error: --tls-cert/--tls-key: {cert} and {key} are not a PEM certificate chain "
        "and its private key" in result.output
    )
    assert "listening" not in result.output


def test_a_key_that_does_not_match_the_certificate_is_a_clear_error(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    cert, _ = self_signed_certificate(first)
    _, key = self_signed_certificate(second)
    result = CliRunner().invoke(
        cli,
        [
            "serve",
            "--store",
            str(tmp_path / "s.db"),
            "--grpc-port",
            "0",
            "--http-port",
            "0",
            "--tls-cert",
            str(cert),
            "--tls-key",
            str(key),
        ],
    )
    assert result.exit_code == 2
    assert "Error: --tls-cert/--tls-key:" in result.output


@pytest.mark.integration
@pytest.mark.parametrize("option", ["--grpc-port", "--http-port"])
def test_a_busy_port_names_the_option_and_the_port(tmp_path: Path, option: str) -> None:
    other = "--http-port" if option == "--grpc-port" else "--grpc-port"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = CliRunner().invoke(
            cli, ["serve", "--store", str(tmp_path / "s.db"), option, str(port), other, "0"]
        )
    assert result.exit_code == 2, result.output
    assert f"Error: {option}: {port} on 127.0.0.1 is in use" in result.output
    assert "Traceback" not in result.output


def test_a_negative_port_other_than_minus_one_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["serve", "--store", str(tmp_path / "s.db"), "--grpc-port", "-5"]
    )
    assert result.exit_code == 2
    assert "Error: --grpc-port: -5 is not a TCP port" in result.output


@pytest.mark.integration
def test_the_process_exits_non_zero_when_a_receiver_dies_after_start(tmp_path: Path) -> None:
    config = ServerConfig(store=tmp_path / "s.db", grpc_port=0, http_port=0)
    lines: list[str] = []

    def kill_http(server: ProcessorServer) -> None:  # the HTTP receiver's thread ends
        assert server._http is not None
        server._http.should_exit = True

    # what stops it is the dead receiver, not time: the guard only bounds a hang
    fired: list[bool] = []
    deadline = threading.Timer(60, lambda: (fired.append(True), signal.raise_signal(15)))
    deadline.start()
    try:
        with pytest.raises(ReceiverFailed, match="the OTLP/HTTP receiver stopped"):
            serve_forever(config, announce=lines.append, started=kill_http)
    finally:
        deadline.cancel()
    assert not fired
    assert lines and "listening" in lines[0]


def _stop_grpc(server: ProcessorServer) -> None:  # the gRPC server stops on its own
    assert server._grpc is not None
    server._grpc.stop(0)


def _break_writer(server: ProcessorServer) -> None:  # the writer thread meets a bug and ends
    def bug() -> float | None:
        raise RuntimeError("a bug in the assembler")

    server.ingestor.assembler.next_due = bug  # type: ignore[method-assign]


@pytest.mark.integration
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
@pytest.mark.parametrize(
    ("breaks", "message"),
    [
        (_stop_grpc, "the OTLP/gRPC receiver stopped"),
        (_break_writer, "the span writer stopped"),
    ],
)
def test_the_process_exits_when_the_grpc_receiver_or_the_writer_dies(
    tmp_path: Path, breaks: Callable[[ProcessorServer], None], message: str
) -> None:
    config = ServerConfig(store=tmp_path / "s.db", grpc_port=0, http_port=0)
    lines: list[str] = []
    # a server that keeps running half-alive is stopped by the guard (and the test fails):
    # what stops it is the fault, not time, so the guard's delay only bounds a hang
    fired: list[bool] = []
    deadline = threading.Timer(60, lambda: (fired.append(True), signal.raise_signal(15)))
    deadline.start()
    try:
        with pytest.raises(ReceiverFailed, match=message):
            serve_forever(config, announce=lines.append, started=breaks)
    finally:
        deadline.cancel()
    assert not fired
    assert lines and "listening" in lines[0]


@pytest.mark.integration
def test_listening_beyond_loopback_without_a_token_warns(tmp_path: Path) -> None:
    lines: list[str] = []
    config = ServerConfig(store=tmp_path / "s.db", host="0.0.0.0", grpc_port=0, http_port=0)

    def stop_at_once(server: ProcessorServer) -> None:
        signal.raise_signal(signal.SIGTERM)

    serve_forever(config, announce=lines.append, started=stop_at_once)
    assert any(
        line.startswith("warning: listening on 0.0.0.0 without a bearer token")
        and "(set `token_file` or SPANGUARD_TOKEN, and `tls_cert`/`tls_key`)" in line
        for line in lines
    ), lines
    lines.clear()
    serve_forever(
        ServerConfig(store=tmp_path / "s.db", grpc_port=0, http_port=0),
        announce=lines.append,
        started=stop_at_once,
    )
    assert not any("warning" in line for line in lines)


@pytest.mark.integration
def test_serve_spells_the_exposure_warning_in_its_options(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "spanguard_processor",
            "serve",
            "--store",
            str(tmp_path / "s.db"),
            "--host",
            "0.0.0.0",
            "--grpc-port",
            "0",
            "--http-port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    with proc:
        assert proc.stdout is not None
        assert "listening" in proc.stdout.readline()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert "warning: listening on 0.0.0.0 without a bearer token" in err
    assert "(set --token-file or SPANGUARD_TOKEN, and --tls-cert/--tls-key)." in err
