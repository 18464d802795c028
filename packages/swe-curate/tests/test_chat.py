"""The chat client against a real local OpenAI-compatible HTTP server (wire protocol, retries,
time-outs, garbage, token accounting)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from curate_openai_server import Delay, Raw, reply_text, reply_tool_calls, serve

from swe_curate._chat import ChatClient, ChatConfig, parse_completion
from swe_curate._errors import JudgeError, JudgeGarbageError, JudgeTimeoutError


def _client(base_url: str, **kw: Any) -> ChatClient:
    cfg = ChatConfig(base_url=base_url, model="fake-judge", api_key="sk-test", backoff_s=0.01, **kw)
    return ChatClient(cfg)


def test_tool_call_round_trip_and_wire_format() -> None:
    with (
        serve(lambda body: reply_tool_calls(("read_file", {"path": "a.py"}))) as srv,
        _client(srv.base_url) as client,
    ):
        reply = client.complete(
            [{"role": "user", "content": "hi"}],
            [{"type": "function", "function": {"name": "read_file"}}],
        )
    assert reply.tool_calls[0].name == "read_file"
    assert reply.tool_calls[0].arguments == {"path": "a.py"}
    assert reply.finish_reason == "tool_calls"
    (request,) = srv.requests
    assert request["model"] == "fake-judge"
    assert request["tools"][0]["function"]["name"] == "read_file"
    assert srv.headers[0]["Authorization"] == "Bearer sk-test"
    assert client.usage.to_json() == {
        "requests": 1,
        "retries": 0,
        "prompt_tokens": 11,
        "completion_tokens": 7,
        "total_tokens": 18,
    }


def test_retries_on_503_then_succeeds_and_counts_retries() -> None:
    answers = itertools.chain(
        [Raw(503, b"busy"), Raw(429, b"slow down")], itertools.repeat(reply_text("ok"))
    )
    with serve(lambda body: next(answers)) as srv, _client(srv.base_url) as client:
        reply = client.complete([{"role": "user", "content": "hi"}])
    assert reply.content == "ok"
    assert client.usage.requests == 3
    assert client.usage.retries == 2
    assert client.usage.total_tokens == 18  # failed attempts carry no usage


def test_garbage_body_raises_typed_error_after_retries() -> None:
    with (
        serve(lambda body: Raw(200, b"<html>proxy error</html>")) as srv,
        _client(srv.base_url, max_retries=2) as client,
        pytest.raises(JudgeGarbageError, match="not a chat completion"),
    ):
        client.complete([{"role": "user", "content": "hi"}])
    assert len(srv.requests) == 3


def test_timeout_raises_typed_error() -> None:
    with (
        serve(lambda body: Delay(1.5, reply_text("late"))) as srv,
        _client(srv.base_url, timeout_s=0.3, max_retries=1) as client,
        pytest.raises(JudgeTimeoutError),
    ):
        client.complete([{"role": "user", "content": "hi"}])
    assert client.usage.requests == 2


def test_client_error_is_not_retried() -> None:
    with (
        serve(lambda body: Raw(401, b'{"error": "bad key"}')) as srv,
        _client(srv.base_url) as client,
        pytest.raises(JudgeError, match="401"),
    ):
        client.complete([{"role": "user", "content": "hi"}])
    assert len(srv.requests) == 1


def test_refused_connection_is_a_judge_error() -> None:
    with serve(lambda body: reply_text("x")) as srv:
        url = srv.base_url
    with _client(url, max_retries=1) as client, pytest.raises(JudgeError):
        client.complete([{"role": "user", "content": "hi"}])


def test_invalid_tool_arguments_are_kept_for_feedback() -> None:
    raw = reply_tool_calls(("answer", "{not json")).body
    (call,) = parse_completion(raw).tool_calls
    assert call.arguments == {"__invalid__": "{not json"}


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"{}",
        b'{"choices": []}',
        b'{"choices": [{"message": "x"}]}',
        b'{"choices": [{"message": {"tool_calls": [{"oops": 1}]}}]}',
    ],
)
def test_parse_rejects_non_completions(raw: bytes) -> None:
    with pytest.raises(JudgeGarbageError):
        parse_completion(raw)


def test_config_from_env() -> None:
    env = {
        "SWE_CURATE_JUDGE_BASE_URL": "http://h/v1",
        "SWE_CURATE_JUDGE_MODEL": "m",
        "OPENAI_API_KEY": "sk-secret-123",
    }
    cfg = ChatConfig.from_env(env, timeout_s=5.0)
    assert (cfg.base_url, cfg.model, cfg.api_key, cfg.timeout_s) == (
        "http://h/v1",
        "m",
        "sk-secret-123",
        5.0,
    )
    assert "sk-secret-123" not in repr(cfg)
    with pytest.raises(JudgeError, match="not configured"):
        ChatConfig.from_env({})
