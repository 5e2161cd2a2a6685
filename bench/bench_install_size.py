"""Install size: the SDK alone (``pip install spanguard``) beside everything
(``pip install 'spanguard[processor]'``), each in a fresh venv, from this clone.

    .venv/bin/python bench/bench_install_size.py

Prints, per install, the distributions in the venv (beyond pip and setuptools) and the size
on disk that the install added to site-packages, and the ratio of the two. Needs PyPI
(or a warm pip cache).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def _install(target: Path, spec: str) -> tuple[int, int, list[str]]:
    venv.EnvBuilder(with_pip=True).create(target)
    python = str(target / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIRTUAL_ENV")}
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
            env=env,
        ).stdout.strip()
    )
    empty = _size(site)
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--disable-pip-version-check", spec],
        check=True,
        env=env,
    )
    listed = json.loads(
        subprocess.run(
            [python, "-m", "pip", "list", "--format=json"],
            check=True,
            capture_output=True,
            text=True,
            env=env,
        ).stdout
    )
    names = sorted(
        p["name"].lower() for p in listed if p["name"].lower() not in {"pip", "setuptools"}
    )
    return _size(site) - empty, len(names), names


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        sdk = _install(Path(tmp) / "sdk", str(ROOT))
        full = _install(Path(tmp) / "full", f"{ROOT}[processor]")
    mib = 1024 * 1024
    print(f"SDK alone          : {sdk[0] / mib:6.1f} MiB, {sdk[1]} distributions")
    print(f"SDK + [processor]  : {full[0] / mib:6.1f} MiB, {full[1]} distributions")
    print(f"ratio full / SDK   : {full[0] / sdk[0]:.1f}x")
    heavy = {"numpy", "scipy", "click", "starlette", "uvicorn", "orjson", "pyyaml"}
    print(f"heavy packages in the SDK install: {sorted(heavy & set(sdk[2])) or 'none'}")
    print("SDK alone installs:", ", ".join(sdk[2]))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
