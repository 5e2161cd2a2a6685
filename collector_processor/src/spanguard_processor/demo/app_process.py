"""The demo's application process: an instrumented agent serving the suite's requests.

Run as its own process, as a real app would be: it configures the spanguard SDK from the
standard ``OTEL_*`` environment variables (the demo points them at the processor), answers
every variant of the suite inside a ``spanguard.request`` carrying its counterfactual
identity, lets simulated users rate some answers (feedback and retries arrive later, by request
id), flushes, and prints its export counts as one JSON line. It imports only the SDK and the
agent module, never the processor.

``python path/to/app_process.py AGENT.py VARIANTS.jsonl --bias 0.6`` (run as a script, so that
the processor package is never imported into the app).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import spanguard

#: Prefix of the progress lines written to stderr: ``PROGRESS done total``.
PROGRESS = "PROGRESS"
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+")


def redact(key: str, text: str) -> str:
    """The demo's redaction hook (``key`` names the attribute): e-mail addresses never leave
    the process."""
    return _EMAIL.sub("[email]", text) if "@" in text else text


def _unit(*parts: str) -> float:
    digest = hashlib.sha256("\x1f".join(parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _load_agent(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("demo_agent", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"{path}: cannot be imported as a Python module.")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _simulate_user(variant: dict[str, Any], request_id: str, reply: str) -> None:
    """Users dislike being handed off and sometimes ask again: deterministic per variant."""
    handed_off = "colleague" in reply
    if handed_off and _unit(variant["id"], "rating") < 0.5:
        spanguard.feedback(request_id, "negative")
        if _unit(variant["id"], "retry") < 0.5:
            spanguard.mark_retried(request_id)
    elif _unit(variant["id"], "rating") < 0.2:
        spanguard.feedback(request_id, "positive")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("agent", type=Path)
    parser.add_argument("variants", type=Path)
    parser.add_argument("--bias", type=float, default=0.0)
    parser.add_argument("--bias-against", default="female")
    parser.add_argument("--service-name", default="support-agent")
    args = parser.parse_args(argv)

    agent = _load_agent(args.agent)
    spanguard.configure(service_name=args.service_name, capture_content=True, redact=redact)
    variants = [json.loads(line) for line in args.variants.read_text("utf-8").splitlines()]
    every = max(1, len(variants) // 200)
    for done, variant in enumerate(variants):
        if done % every == 0:  # progress for the demo's display, on stderr
            print(f"{PROGRESS} {done} {len(variants)}", file=sys.stderr, flush=True)
        # The variant id is the request id: two runs of the demo mine the same cases.
        with spanguard.request(
            "support_agent",
            request_id=variant["id"],
            seed_id=variant["seed_id"],
            variant_id=variant["id"],
            assignments=variant["assignments"],
            input=variant["prompt"],
        ) as req:
            reply = agent.answer(
                variant["prompt"],
                variant["assignments"],
                bias=args.bias,
                bias_against=args.bias_against,
            )
            req.set_output(reply)
        _simulate_user(variant, req.request_id, reply)
    spanguard.force_flush()
    stats = spanguard.export_stats()
    spanguard.shutdown()
    print(
        json.dumps(
            {
                "requests": len(variants),
                "exported": stats.exported,
                "dropped": stats.dropped,
                "failed": stats.failed,
            }
        )
    )
    return 0 if stats.dropped == 0 and stats.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
