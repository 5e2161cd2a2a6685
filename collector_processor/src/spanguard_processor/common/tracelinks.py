"""Links from reports to a trace viewer: ``--trace-url TEMPLATE`` with ``{trace_id}``.

One template for every report (fairness evidence, regression case diffs), e.g. Jaeger's
``http://localhost:16686/trace/{trace_id}`` or a Phoenix/Langfuse trace page. Only http(s)
URLs are accepted, so a report can never carry a ``javascript:`` link.
"""

from __future__ import annotations

from urllib.parse import quote

from spanguard.exceptions import ConfigError

__all__ = ["PLACEHOLDER", "trace_link", "validate_template"]

PLACEHOLDER = "{trace_id}"


def validate_template(template: str | None, option: str = "trace_url") -> None:
    """Raise ConfigError (exit 2 at the CLI) for a template without ``{trace_id}`` or http(s)."""
    if template is None:
        return
    if PLACEHOLDER not in template:
        raise ConfigError(
            option,
            f"must contain {PLACEHOLDER}, e.g. "
            "http://localhost:16686/trace/{trace_id}; got "
            f"{template!r}.",
        )
    if not template.lower().startswith(("http://", "https://")):
        raise ConfigError(option, f"must be an http:// or https:// URL; got {template!r}.")


def trace_link(template: str | None, trace_id: str | None) -> str | None:
    """The template with the (URL-quoted) trace id, or None without either."""
    if template is None or trace_id is None:
        return None
    return template.replace(PLACEHOLDER, quote(trace_id, safe=""))
