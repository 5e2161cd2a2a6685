"""``spanguard serve`` refuses bad settings with exit code 2 and a message naming the option."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanguard_processor.cli import cli


@pytest.mark.parametrize(("args", "message"), [
    (["--grpc-port", "-1", "--http-port", "-1"], "--grpc-port: both receivers are disabled"),
    (["--num-traces", "0"], "--num-traces: must be at least 1."),
    (["--wait-duration", "-1"], "--wait-duration: must not be negative."),
    (["--http-port", "70000"], "--http-port: 70000 is not a TCP port"),
])
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
        result = CliRunner().invoke(cli, ["serve", "--store", str(tmp_path / "s.db"),
                                          "--grpc-port", "-1", "--http-port", str(port)])
    assert result.exit_code == 2
    assert "cannot listen" in result.output
