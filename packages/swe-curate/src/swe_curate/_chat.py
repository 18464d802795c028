"""A small client for any OpenAI-compatible ``/v1/chat/completions`` endpoint (the LLM judge's
transport): tool calls, retries with backoff, deadlines, and token accounting.

Configuration comes from the environment so no key is ever written into a record or a config
file: ``SWE_CURATE_JUDGE_BASE_URL`` (e.g. ``http://127.0.0.1:8000/v1``), ``SWE_CURATE_JUDGE_MODEL``
and ``SWE_CURATE_JUDGE_API_KEY`` (``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` are the fallbacks).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import httpx

from swe_curate._errors import JudgeError, JudgeGarbageError, JudgeTimeoutError

Message = dict[str, Any]
_RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


@attrs.frozen
class ChatConfig:
    """Where and how to reach the judge model.

    ``timeout_s`` bounds one HTTP attempt; ``max_retries`` more attempts follow a timeout, a
    connection error, a retryable status (429, 5xx) or an unparseable body, ``backoff_s``
    doubling each time.
    """

    base_url: str
    model: str
    api_key: str = attrs.field(default="", repr=False)
    timeout_s: float = 120.0
    max_retries: int = 3
    backoff_s: float = 1.0
    temperature: float = 0.2
    max_tokens: int = 4096

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> ChatConfig:
        """Read base URL, model and key from the environment; raise :class:`JudgeError` if unset."""
        env = os.environ if env is None else env
        base_url = env.get("SWE_CURATE_JUDGE_BASE_URL") or env.get("OPENAI_BASE_URL")
        model = env.get("SWE_CURATE_JUDGE_MODEL")
        if not base_url or not model:
            raise JudgeError(
                "LLM judge not configured: set SWE_CURATE_JUDGE_BASE_URL and SWE_CURATE_JUDGE_MODEL"
            )
        key = env.get("SWE_CURATE_JUDGE_API_KEY") or env.get("OPENAI_API_KEY") or ""
        return cls(base_url=base_url, model=model, api_key=key, **overrides)


@attrs.define
class TokenUsage:
    """Cumulative accounting over every request a client made (thread-safe via the client)."""

    requests: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_json(self) -> dict[str, int]:
        return {
            "requests": self.requests,
            "retries": self.retries,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
        }


@attrs.frozen
class ChatToolCall:
    """One function call the model asked for; ``arguments`` is the decoded JSON object."""

    id: str
    name: str
    arguments: dict[str, Any]


@attrs.frozen
class ChatReply:
    """The assistant message (as sent, for the transcript) and its decoded tool calls."""

    message: Message
    content: str
    tool_calls: tuple[ChatToolCall, ...]
    finish_reason: str


class ChatClient:
    """Synchronous chat client; one instance may be shared across threads."""

    def __init__(self, config: ChatConfig, transport: httpx.BaseTransport | None = None) -> None:
        self.config = config
        self.usage = TokenUsage()
        self._lock = threading.Lock()
        headers = {"Content-Type": "application/json"}
        if config.api_key:
            headers["Authorization"] = f"Bearer {config.api_key}"
        self._http = httpx.Client(
            base_url=config.base_url.rstrip("/") + "/",
            headers=headers,
            timeout=httpx.Timeout(config.timeout_s),
            transport=transport,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def complete(
        self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]] = ()
    ) -> ChatReply:
        """One chat completion, retried per :class:`ChatConfig`.

        Raises :class:`JudgeTimeoutError` when every attempt timed out,
        :class:`JudgeGarbageError` when the endpoint kept answering something that is not a chat
        completion, and :class:`JudgeError` for other failures (4xx, refused connections).
        """
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": list(messages),
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
        }
        if tools:
            body["tools"] = list(tools)
            body["tool_choice"] = "auto"
        last: JudgeError | None = None
        for attempt in range(self.config.max_retries + 1):
            if attempt:
                with self._lock:
                    self.usage.retries += 1
                time.sleep(self.config.backoff_s * 2 ** (attempt - 1))
            try:
                return self._attempt(body)
            except (JudgeTimeoutError, JudgeGarbageError) as exc:
                last = exc
            except _RetryableError as exc:
                last = JudgeError(str(exc))
        assert last is not None
        raise last

    def _attempt(self, body: Mapping[str, Any]) -> ChatReply:
        with self._lock:
            self.usage.requests += 1
        try:
            response = self._http.post("chat/completions", json=body)
        except httpx.TimeoutException as exc:
            raise JudgeTimeoutError(f"judge timed out after {self.config.timeout_s}s") from exc
        except httpx.TransportError as exc:
            raise _RetryableError(f"transport error talking to the judge: {exc}") from exc
        if response.status_code in _RETRY_STATUS:
            raise _RetryableError(f"judge answered HTTP {response.status_code}")
        if response.status_code >= 400:
            raise JudgeError(f"judge answered HTTP {response.status_code}: {response.text[:300]}")
        reply = parse_completion(response.content)
        usage = _usage(response.content)
        with self._lock:
            self.usage.prompt_tokens += usage[0]
            self.usage.completion_tokens += usage[1]
        return reply


class _RetryableError(Exception):
    """Internal: a transient failure worth another attempt."""


def _usage(raw: bytes) -> tuple[int, int]:
    usage = json.loads(raw).get("usage") or {}
    return int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)


def parse_completion(raw: bytes | str) -> ChatReply:
    """Decode a ``chat.completion`` body; :class:`JudgeGarbageError` if it is not one.

    Tool-call arguments arrive as a JSON *string* on the wire; a call whose arguments do not
    decode to an object is kept with ``{"__invalid__": <raw text>}`` so the caller can tell the
    model what was wrong instead of failing the whole task.
    """
    try:
        data = json.loads(raw)
        choice = data["choices"][0]
        message = choice["message"]
        if not isinstance(message, dict):
            raise TypeError("message is not an object")
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        text = raw if isinstance(raw, str) else raw[:200].decode(errors="replace")
        raise JudgeGarbageError(f"not a chat completion: {text[:200]!r}") from exc
    calls: list[ChatToolCall] = []
    for raw_call in message.get("tool_calls") or ():
        try:
            function = raw_call["function"]
            name = str(function["name"])
            call_id = str(raw_call.get("id") or f"call_{len(calls)}")
        except (KeyError, TypeError) as exc:
            raise JudgeGarbageError(f"malformed tool call: {raw_call!r}"[:300]) from exc
        arguments = function.get("arguments") or "{}"
        try:
            decoded = json.loads(arguments) if isinstance(arguments, str) else arguments
            if not isinstance(decoded, dict):
                raise TypeError("arguments are not a JSON object")
        except (ValueError, TypeError):
            decoded = {"__invalid__": str(arguments)[:500]}
        calls.append(ChatToolCall(call_id, name, decoded))
    return ChatReply(
        message={k: v for k, v in message.items() if k in ("role", "content", "tool_calls")},
        content=str(message.get("content") or ""),
        tool_calls=tuple(calls),
        finish_reason=str(choice.get("finish_reason") or ""),
    )
