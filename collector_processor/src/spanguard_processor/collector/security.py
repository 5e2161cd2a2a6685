"""Who may send spans: an optional bearer token (compared in constant time) and TLS.

The token comes from a file or the ``SPANGUARD_TOKEN`` environment variable, never from the
command line (where ``ps`` would show it). Both receivers check it: OTLP/HTTP answers 401 with
``WWW-Authenticate: Bearer``; OTLP/gRPC answers ``UNAUTHENTICATED``. ``GET /health`` stays open
(it reveals counters only) so load balancers can probe it.
"""

from __future__ import annotations

import hmac
import os
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from spanguard.exceptions import ConfigError

__all__ = ["OPEN_PATHS", "TOKEN_ENV", "Security", "TokenInterceptor", "read_token", "token_matches"]

TOKEN_ENV = "SPANGUARD_TOKEN"
OPEN_PATHS = frozenset({"/health"})


def token_matches(expected: bytes, authorization: str | bytes | None) -> bool:
    """True when ``authorization`` is ``Bearer <expected>``; constant time in the token."""
    if authorization is None:
        return False
    if isinstance(authorization, str):
        authorization = authorization.encode("utf-8", "replace")
    scheme, _, presented = authorization.strip().partition(b" ")
    return scheme.lower() == b"bearer" and hmac.compare_digest(presented.strip(), expected)


def read_token(token_file: Path | None) -> bytes | None:
    """The token from ``token_file`` or ``$SPANGUARD_TOKEN`` (file first); None when neither."""
    if token_file is not None:
        try:
            text = token_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError("token_file", f"{token_file} cannot be read: {exc}.") from None
        if not text:
            raise ConfigError("token_file", f"{token_file} is empty.")
    else:
        text = os.environ.get(TOKEN_ENV, "").strip()
        if not text:
            return None
    if len(text) < 16:
        raise ConfigError(
            "token_file" if token_file else TOKEN_ENV, "the token must be at least 16 characters."
        )
    return text.encode("utf-8")


@dataclass(frozen=True, slots=True)
class Security:
    """The token (if any) and the TLS certificate chain and key files (if any)."""

    token: bytes | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None

    def __post_init__(self) -> None:
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ConfigError("tls_cert/tls_key", "give both the certificate and the key.")
        for name, path in (("tls_cert", self.tls_cert), ("tls_key", self.tls_key)):
            if path is not None and not path.is_file():
                raise ConfigError(name, f"{path} does not exist.")
        if self.tls_cert is not None and self.tls_key is not None:
            self._load(self.tls_cert, self.tls_key)

    @staticmethod
    def _load(cert: Path, key: Path) -> None:
        """Load the pair as the servers will, so a bad one fails at start, not in a thread."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        try:
            context.load_cert_chain(cert, key)
        except (ssl.SSLError, OSError) as exc:
            raise ConfigError(
                "tls_cert/tls_key",
                f"{cert} and {key} are not a PEM certificate chain and its private key, or "
                f"they do not match ({getattr(exc, 'reason', None) or exc}).",
            ) from None

    @property
    def tls(self) -> bool:
        return self.tls_cert is not None

    def grpc_credentials(self) -> grpc.ServerCredentials:
        assert self.tls_cert is not None and self.tls_key is not None
        return grpc.ssl_server_credentials(
            [(self.tls_key.read_bytes(), self.tls_cert.read_bytes())]
        )


class TokenInterceptor(grpc.aio.ServerInterceptor):
    """gRPC: calls without ``authorization: Bearer <token>`` end with UNAUTHENTICATED, decided
    from the call's headers before its message is read (the refusal is a streaming handler
    that never reads) or any other work is done."""

    def __init__(self, token: bytes) -> None:
        self._token = token

        async def deny(requests: object, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
            await context.abort(
                grpc.StatusCode.UNAUTHENTICATED, "a valid bearer token is required."
            )
            raise AssertionError("unreachable: abort raises")  # pragma: no cover

        self._deny: grpc.RpcMethodHandler[Any, Any] = grpc.stream_unary_rpc_method_handler(deny)

    async def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]
        ],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        for key, value in handler_call_details.invocation_metadata or ():
            if key == "authorization" and token_matches(self._token, value):
                return await continuation(handler_call_details)
        return self._deny
