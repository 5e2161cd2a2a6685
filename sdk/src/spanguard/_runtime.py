"""Reading the process-wide state: which tracer the decorators use, content settings, the
internal-error policy (the state itself is :data:`._state.STATE`).

The decorators resolve their tracer at call time, cheaply, so that a provider set after
decoration (by the app, by :func:`spanguard.configure` or by :mod:`spanguard.testing`) is used
from the next call on. When no SDK provider exists anywhere, :func:`active_tracer` returns
``None`` and the decorators call the function directly: an unconfigured call costs almost nothing.
"""

from __future__ import annotations

import functools
import logging
import os

from opentelemetry import trace
from opentelemetry.trace import NoOpTracerProvider, ProxyTracerProvider, Tracer, TracerProvider

from . import semconv
from ._state import STATE, ContentSettings

__all__ = [
    "active_tracer",
    "content_settings",
    "env_capture",
    "installed_version",
    "instrumentation_version",
    "internal_error",
    "now_ns",
    "pop_override",
    "push_override",
    "reset_warnings",
    "set_content_settings",
    "strict",
    "warn_dropped_field",
]

logger = logging.getLogger("spanguard")

INSTRUMENTATION_NAME = "spanguard"
#: the scope version of spanguard's spans when no distribution metadata is found (the source
#: tree put on ``sys.path`` by hand, not installed)
UNKNOWN_VERSION = "0+unknown"


def installed_version(distribution: str = INSTRUMENTATION_NAME) -> str:
    """The version of the installed ``distribution`` (from its metadata), else
    :data:`UNKNOWN_VERSION`."""
    # imported here: importlib.metadata would add ~12 ms to `import spanguard`
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return UNKNOWN_VERSION


@functools.cache
@functools.cache
def instrumentation_version() -> str:
    """The version spanguard's spans carry in their instrumentation scope (read once, when
    the first tracer is made, so that an unconfigured ``import spanguard`` stays light)."""
    return installed_version()


CAPTURE_ENV = semconv.CAPTURE_MESSAGE_CONTENT_ENV


def env_capture() -> bool:
    """Whether the GenAI content-capture environment variable is on
    (:func:`spanguard.semconv.content_capture`: anything but ``NO_CONTENT``)."""
    return semconv.content_capture().captured


_NO_SDK = (ProxyTracerProvider, NoOpTracerProvider)


# OTEL_PYTHON_TRACER_PROVIDER names a provider that OpenTelemetry loads lazily; only then must
# the public (slower) getter run while no global provider is set.
_LAZY_PROVIDER = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ
_HAS_GLOBAL_SLOT = hasattr(trace, "_TRACER_PROVIDER")


def active_tracer() -> Tracer | None:
    """The tracer spanguard spans go to now, or ``None`` when no SDK provider is set."""
    provider = STATE.override
    if provider is None:
        # reading the API's global slot directly keeps an unconfigured call well under 2 µs
        if _HAS_GLOBAL_SLOT and not _LAZY_PROVIDER:
            provider = trace._TRACER_PROVIDER
            if provider is None:
                return None
        else:
            provider = trace.get_tracer_provider()
        if isinstance(provider, _NO_SDK):
            return None
    cached_provider, cached_tracer = STATE.cached_tracer
    if provider is cached_provider:
        return cached_tracer
    tracer = provider.get_tracer(INSTRUMENTATION_NAME, instrumentation_version())
    STATE.cached_tracer = (provider, tracer)
    return tracer


def now_ns() -> int:
    """The time for a span's start or end or an event: spanguard's clock, which
    :func:`spanguard.testing.use_clock` replaces (the one place the SDK reads time from)."""
    return STATE.clock()


def push_override(provider: TracerProvider) -> None:
    """Send spanguard's spans to ``provider`` (a private one) until :func:`pop_override`."""
    with STATE.lock:
        STATE.overrides.append(provider)
        STATE.override = provider


def pop_override(provider: TracerProvider) -> None:
    """Stop sending spans to ``provider``; the previous override (if any) applies again."""
    with STATE.lock:
        overrides = STATE.overrides
        if provider in overrides:
            # remove the last occurrence, so nested pushes of one provider unwind in order
            index = len(overrides) - 1 - overrides[::-1].index(provider)
            del overrides[index]
        STATE.override = overrides[-1] if overrides else None


def content_settings() -> ContentSettings:
    """The content settings in force: configure()'s, else the environment variable's
    (read once; :func:`set_content_settings` with ``None`` reads it again)."""
    settings = STATE.content
    if settings is None:
        settings = STATE.content = ContentSettings(capture=env_capture())
    return settings


def set_content_settings(settings: ContentSettings | None) -> None:
    """Install content settings (``None``: read the environment variable again)."""
    STATE.content = settings


STRICT_ENV = "SPANGUARD_STRICT"
#: distinct (place, field) pairs remembered for warn-once; beyond it, warnings stop
MAX_REMEMBERED_WARNINGS = 4096


def strict() -> bool:
    """Whether ``SPANGUARD_STRICT=1``: spanguard's own errors are re-raised (for its tests)."""
    return os.environ.get(STRICT_ENV, "").strip() == "1"


def internal_error(where: str, exc: BaseException) -> None:
    """Handle a bug inside spanguard: log it once per place, and the app goes on.

    Only with ``SPANGUARD_STRICT=1`` (set by spanguard's own test suite) is it re-raised, so
    a bug in spanguard never breaks the app or the app's own tests.
    """
    if strict():
        raise exc
    with STATE.lock:
        first = where not in STATE.reported
        STATE.reported.add(where)
    if first:
        logger.error("spanguard internal error in %s (telemetry skipped)", where, exc_info=exc)


def warn_dropped_field(where: str, field: str, why: str, *, item: str | None = None) -> None:
    """A wrong-typed value from the app: the field is dropped, and a warning is logged the
    first time only for each place and field (``item``, e.g. "document 3", is told in the
    message but is not part of what counts as the same place)."""
    key = (where, field)
    with STATE.lock:
        warned = STATE.warned
        if key in warned or len(warned) >= MAX_REMEMBERED_WARNINGS:
            return
        warned.add(key)
    place = f"{where}: {item}" if item else where
    logger.warning(
        "spanguard: %s: dropped field '%s' because %s (further cases of this "
        "field here are not logged).",
        place,
        field,
        why,
    )


def reset_warnings() -> None:
    """Forget which warnings and internal errors were logged (each logs once again)."""
    STATE.reset_warnings()
