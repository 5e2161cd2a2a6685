"""Answer every case of a regression case set with an app, for ``spanguard cases run --outputs``.

Usage (from the repository root)::

    python examples/ci/answer_cases.py --cases evalset/cases.jsonl \\
        --app examples.rag_app:answer -o runs/outputs.jsonl

Each case's ``input`` is passed to ``app(prompt, {})`` (the ``spanguard run`` signature, no
counterfactual attributes); the reply (a string, or the ``text`` of a
``{"text", "metadata"}`` dict) is written as ``{"id", "output"}``, one JSON object a line, in
case order.

The workflow in ``github-actions.yml`` replays the cases with ``spanguard cases run --app``
instead (repeats per case, spans captured); this helper stays for apps that must be answered
outside spanguard's process (a deployed endpoint, another language).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path


def _load(spec: str) -> object:
    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise SystemExit(f"--app must be MODULE:FUNCTION, got {spec!r}")
    sys.path.insert(0, str(Path.cwd()))
    return getattr(importlib.import_module(module), attr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Answer regression cases with an app.")
    parser.add_argument("--cases", type=Path, required=True)
    parser.add_argument("--app", required=True, help="MODULE:FUNCTION, called app(prompt, {})")
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args(argv)
    app = _load(args.app)
    assert callable(app), f"{args.app} is not callable"
    lines = []
    with args.cases.open(encoding="utf-8") as cases:
        for number, line in enumerate(cases, start=1):
            if not line.strip():
                continue
            case = json.loads(line)
            if not isinstance(case, dict) or "id" not in case or "input" not in case:
                raise SystemExit(f"{args.cases}:{number}: a case needs 'id' and 'input'.")
            reply = app(case["input"], {})
            text = reply.get("text", "") if isinstance(reply, dict) else reply
            lines.append(json.dumps({"id": case["id"], "output": str(text)}, sort_keys=True))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    print(f"wrote {len(lines)} output(s) to {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
