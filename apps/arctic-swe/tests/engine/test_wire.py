"""The completion wire format as the client reads it: weight-version spans (vLLM's start
label ``"default"`` included), malformed answers, the request body (Arctic-SWE §3.3)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arctic_swe.engine import EngineProtocolError
from arctic_swe.engine._wire import (
    NEUTRAL_SAMPLING,
    START_LABEL,
    completion_body,
    parse_completion,
    version_label,
    versions_from_spans,
)
from arctic_swe.serve import spans_from_versions
from load_router import GenerateRequest


@given(st.lists(st.integers(0, 4), max_size=40).map(sorted))
def test_weight_version_spans_round_trip(versions: list[int]) -> None:
    spans = [span.model_dump() for span in spans_from_versions([str(v) for v in versions])]
    assert versions_from_spans(spans, len(versions)) == tuple(versions)
    assert len(spans) == len(set(versions))
    assert all(s["start"] < s["end"] for s in spans)


def _reply(ids: list[int], spans: Any) -> dict[str, Any]:
    choice = {
        "token_ids": ids,
        "logprobs": {"token_logprobs": [-1.0] * len(ids)},
        "weight_versions": spans,
    }
    return {"choices": [choice]}


@given(
    st.lists(st.integers(0, 50), min_size=1, max_size=10),
    st.lists(
        st.fixed_dictionaries(
            {"version": st.sampled_from(["0", "1", "x", "-1"]), "start": st.integers(-1, 12)}
        ).map(lambda d: {**d, "end": d["start"] + 2}),
        max_size=5,
    ),
)
def test_a_completion_is_accepted_only_with_spans_tiling_its_tokens(
    ids: list[int], spans: list[dict[str, Any]]
) -> None:
    try:
        result = parse_completion(_reply(ids, spans))
    except EngineProtocolError:
        return
    assert [s["start"] for s in spans] == list(range(0, 2 * len(spans), 2))
    assert 2 * len(spans) == len(ids)
    assert result.token_versions == tuple(int(s["version"]) for s in spans for _ in range(2))


@pytest.mark.parametrize(
    "reply",
    [
        {},
        {"choices": []},
        {"choices": [{"token_ids": [1], "logprobs": None, "weight_versions": []}]},
        _reply([1, 2], [{"version": "1", "start": 0, "end": 1}]),
        _reply(
            [1, 2], [{"version": "2", "start": 0, "end": 1}, {"version": "1", "start": 1, "end": 2}]
        ),
        _reply([1], None),
    ],
)
def test_malformed_completions_are_protocol_errors(reply: dict[str, Any]) -> None:
    with pytest.raises(EngineProtocolError):
        parse_completion(reply)


def test_the_start_label_is_the_start_version_and_only_decimals_are_versions() -> None:
    reply = _reply([5, 6, 7], [{"version": START_LABEL, "start": 0, "end": 2},
                               {"version": "4", "start": 2, "end": 3}])  # fmt: skip
    result = parse_completion(reply, start_version=3)
    assert result.token_versions == (3, 3, 4)
    assert result.policy_version == 4
    assert parse_completion(_reply([1], [{"version": START_LABEL, "start": 0, "end": 1}]))
    assert version_label("12") == 12
    for label in ("v1", "-1", "", "1.0", None, "DEFAULT"):
        with pytest.raises(EngineProtocolError, match="neither a decimal version"):
            version_label(label)


def test_an_empty_turn_takes_its_version_from_the_last_span_or_the_start() -> None:
    assert parse_completion(_reply([], []), start_version=2).policy_version == 2
    spans = [{"version": "5", "start": 0, "end": 0}]
    assert parse_completion(_reply([], spans), start_version=2).policy_version == 5


def test_the_request_body_asks_for_neutral_sampling_explicitly() -> None:
    request = GenerateRequest(rollout_index=0, prompt_ids=(1, 2), max_new_tokens=3, seed=9)
    body = completion_body(request, model="m", stop_token_ids=(0,))
    assert {k: body[k] for k in NEUTRAL_SAMPLING} == dict(NEUTRAL_SAMPLING)
    off = {"top_k": body["top_k"], "min_p": body["min_p"], "rep": body["repetition_penalty"]}
    assert off == {"top_k": 0, "min_p": 0.0, "rep": 1.0}
    sent = {k: body[k] for k in ("prompt", "seed", "stop_token_ids", "logprobs")}
    assert sent == {"prompt": [1, 2], "seed": 9, "stop_token_ids": [0], "logprobs": 0}
    assert body["return_token_ids"] is body["return_weight_versions"] is True
    assert "seed" not in completion_body(
        GenerateRequest(rollout_index=0, prompt_ids=(1,), max_new_tokens=1),
        model="m",
        stop_token_ids=None,
    )
