"""A real HTTP server on 127.0.0.1 speaking the OpenAI ``/v1/chat/completions`` wire protocol.

The "model" behind it is a Python callable that sees each decoded request body and returns what
to do: a completion (``reply_text`` / ``reply_tool_calls``), a raw body with a status, or a
delay (to provoke client time-outs). Every request (headers and body) is recorded so tests can
assert on what went over the wire.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs


@attrs.frozen
class Raw:
    """Send this body with this status (garbage, errors)."""

    status: int
    body: bytes


@attrs.frozen
class Delay:
    """Sleep, then send ``then`` (or close the connection without an answer when ``None``)."""

    seconds: float
    then: Any = None


Policy = Callable[[dict[str, Any]], Any]


def completion(
    message: dict[str, Any], finish: str, prompt_tokens: int = 11, completion_tokens: int = 7
) -> Raw:
    body = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "fake-judge",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
    return Raw(200, json.dumps(body).encode())


def reply_text(text: str) -> Raw:
    return completion({"role": "assistant", "content": text}, "stop")


def reply_tool_calls(*calls: tuple[str, Any]) -> Raw:
    """``calls`` are (name, arguments); arguments that are not a str are JSON-encoded."""
    tool_calls = [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {
                "name": name,
                "arguments": args if isinstance(args, str) else json.dumps(args),
            },
        }
        for i, (name, args) in enumerate(calls)
    ]
    return completion(
        {"role": "assistant", "content": None, "tool_calls": tool_calls}, "tool_calls"
    )


@attrs.define
class FakeOpenAI:
    policy: Policy
    requests: list[dict[str, Any]] = attrs.field(factory=list)
    headers: list[dict[str, str]] = attrs.field(factory=list)
    base_url: str = ""


@contextmanager
def serve(policy: Policy) -> Iterator[FakeOpenAI]:
    state = FakeOpenAI(policy)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            if self.path != "/v1/chat/completions":
                self._send(Raw(404, b'{"error": "not found"}'))
                return
            body = json.loads(raw)
            state.requests.append(body)
            state.headers.append(dict(self.headers.items()))
            action = state.policy(body)
            while isinstance(action, Delay):
                time.sleep(action.seconds)
                if action.then is None:
                    return
                action = action.then
            self._send(action)

        def _send(self, raw: Raw) -> None:
            try:
                self.send_response(raw.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw.body)))
                self.end_headers()
                self.wfile.write(raw.body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (time-out test): nothing to answer

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
