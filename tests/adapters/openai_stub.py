"""A local OpenAI-compatible HTTP server on 127.0.0.1 answering in the real wire format.

Each test scripts the answers: ``responder(path, body)`` returns the JSON body to send. Every
request body is kept in ``requests`` so tests can assert what the adapter sent.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[str, dict[str, Any]], dict[str, Any]]


@dataclass
class Stub:
    base_url: str
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def chat_completion(
    content: str | None = "Hello.",
    *,
    refusal: str | None = None,
    tool_calls: list[tuple[str, str, str]] = (),  # type: ignore[assignment]
    prompt_tokens: int = 12,
    completion_tokens: int = 5,
    model: str = "gpt-4o-mini-2024-07-18",
) -> dict[str, Any]:
    """A ``chat.completion`` object as the API sends it."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "refusal": refusal,
        "annotations": [],
    }
    if tool_calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
            for call_id, name, args in tool_calls
        ]
    finish = "tool_calls" if tool_calls else "stop"
    return {
        "id": "chatcmpl-AbC123",
        "object": "chat.completion",
        "created": 1_732_000_000,
        "model": model,
        "system_fingerprint": "fp_0123456789",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
        "service_tier": "default",
    }


def response(
    text: str | None = "Hello.",
    *,
    refusal: str | None = None,
    function_calls: list[tuple[str, str, str]] = (),  # type: ignore[assignment]
    input_tokens: int = 10,
    output_tokens: int = 4,
    model: str = "gpt-4o-mini-2024-07-18",
) -> dict[str, Any]:
    """A Responses API ``response`` object as the API sends it."""
    output: list[dict[str, Any]] = [
        {
            "type": "function_call",
            "id": f"fc_{i}",
            "call_id": call_id,
            "name": name,
            "arguments": args,
            "status": "completed",
        }
        for i, (call_id, name, args) in enumerate(function_calls)
    ]
    content: list[dict[str, Any]] = []
    if text is not None:
        content.append({"type": "output_text", "text": text, "annotations": [], "logprobs": []})
    if refusal is not None:
        content.append({"type": "refusal", "refusal": refusal})
    if content:
        output.append(
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "content": content,
            }
        )
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1_732_000_000,
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
        "user": None,
        "metadata": {},
    }


def _refused(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
    """The API's own refusal of ``metadata`` on a chat completion that is not stored."""
    if path == "/chat/completions" and body.get("metadata") and body.get("store") is not True:
        return 400, {
            "error": {
                "message": "The 'metadata' parameter is only allowed when 'store' is enabled.",
                "type": "invalid_request_error",
                "param": "metadata",
                "code": None,
            }
        }
    return None


@contextmanager
def openai_stub(responder: Responder) -> Iterator[Stub]:
    """Serve ``responder`` on 127.0.0.1 at a free port; yield the stub (``base_url`` …)."""
    lock = threading.Lock()
    holder: list[Stub] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            path = self.path.removeprefix("/v1")
            with lock:
                holder[0].requests.append((path, body))
                status, answer = _refused(path, body) or (200, responder(path, body))
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    holder.append(Stub(base_url=f"http://127.0.0.1:{server.server_address[1]}/v1"))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield holder[0]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def support_answer(biased: bool) -> Responder:
    """A support model for fixtures: it answers every refund question, except that, when
    ``biased``, it refuses customers described as women."""

    def answer(path: str, body: dict[str, Any]) -> dict[str, Any]:
        text = json.dumps(body.get("messages") or body.get("input"))
        refuse = biased and "woman" in text
        reply = (
            "I cannot help with that request."
            if refuse
            else "Your refund is on its way; it takes 5 business days."
        )
        return chat_completion(reply) if path == "/chat/completions" else response(reply)

    return answer


if __name__ == "__main__":  # serve a fixture model until interrupted: python -m ...openai_stub
    import sys
    import time

    with openai_stub(support_answer("--biased" in sys.argv)) as served:
        print(served.base_url, flush=True)
        while True:
            time.sleep(3600)
