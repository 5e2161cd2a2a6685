"""The ``spanguard`` console script: checks that the processor's dependencies are installed.

``pip install spanguard`` installs the SDK alone (OpenTelemetry only); the processor, the
evaluators and this command need ``pip install 'spanguard[processor]'``. Without them the
command says so in one line (exit code 2) instead of failing with an ``ImportError`` traceback.
"""

from __future__ import annotations

import importlib.util
import sys

__all__ = ["INSTALL_HINT", "main", "missing_dependencies"]

INSTALL_HINT = "pip install 'spanguard[processor]'"

#: import name -> distribution name, for every dependency of the ``processor`` extra
REQUIRED = {
    "click": "click",
    "numpy": "numpy",
    "scipy": "scipy",
    "yaml": "pyyaml",
    "orjson": "orjson",
    "zstandard": "zstandard",
    "uvicorn": "uvicorn",
    "httptools": "httptools",
    "grpc": "grpcio",
    "google.protobuf": "protobuf",
    "opentelemetry.proto": "opentelemetry-proto",
}
#: dependencies of the ``processor`` extra used when installed (not on every platform)
OPTIONAL = {
    "uvloop": "uvloop",  # the OTLP/HTTP receiver's event loop; asyncio's without it
    "isal": "isal",  # ISA-L's CRC-32 for the store's checksums; zlib's without it
}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package is missing, or a broken one
        return False


def missing_dependencies() -> list[str]:
    """Distribution names of the processor's dependencies that are not installed, sorted."""
    return sorted({dist for module, dist in REQUIRED.items() if not _installed(module)})


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: the CLI, or a one-line install hint (exit code 2)."""
    missing = missing_dependencies()
    if missing:
        print(
            f"spanguard: the command line needs the processor's dependencies, which are not "
            f"installed ({', '.join(missing)}); install them with: {INSTALL_HINT}",
            file=sys.stderr,
        )
        sys.exit(2)
    from .cli import main as cli_main

    cli_main(argv)
