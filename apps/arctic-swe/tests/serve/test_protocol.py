"""The completion request and response models: what vLLM clients send parses, what the engine
cannot honour is named, version spans tile the output (Arctic-SWE §3.3)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from arctic_swe.serve import CompletionRequest, spans_from_versions

token_ids = st.lists(st.integers(0, 10_000), min_size=1, max_size=50)


@given(token_ids, st.booleans(), st.integers(1, 4096), st.none() | st.integers(0, 2**31))
def test_a_vllm_rl_request_parses_to_its_token_ids(
    ids: list[int], batched: bool, max_tokens: int, seed: int | None
) -> None:
    body: dict[str, Any] = {
        "model": "m",
        "prompt": [ids] if batched else ids,
        "max_tokens": max_tokens,
        "temperature": 1.0,
        "top_p": 1.0,
        "seed": seed,
        "logprobs": 0,
        "return_token_ids": True,
        "return_weight_versions": True,
        "skip_special_tokens": False,
        "some_future_vllm_field": 3,  # ignored, as vLLM only warns
    }
    request = CompletionRequest.model_validate(body)
    assert request.prompt_ids() == tuple(ids)
    assert request.unsupported() is None


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ({"stream": True}, "stream"),
        ({"n": 2}, "n=2"),
        ({"temperature": 0.7}, "temperature"),
        ({"top_p": 0.9}, "top_p"),
        ({"top_k": 5}, "top_k"),
        ({"min_p": 0.05}, "min_p"),
        ({"repetition_penalty": 1.1}, "repetition_penalty"),
        ({"presence_penalty": 0.5}, "penalties"),
        ({"frequency_penalty": -0.5}, "penalties"),
        ({"logprobs": 3}, "logprobs=3"),
    ],
)
def test_sampling_the_engine_does_not_do_is_named(extra: dict[str, Any], words: str) -> None:
    reason = CompletionRequest.model_validate({"prompt": [1], **extra}).unsupported()
    assert reason is not None
    assert words in reason


def test_the_clients_explicit_neutral_sampling_is_accepted() -> None:
    from arctic_swe.engine._wire import NEUTRAL_SAMPLING

    request = CompletionRequest.model_validate({"prompt": [1], **NEUTRAL_SAMPLING})
    assert request.neutral_sampling()
    assert request.unsupported() is None
    assert CompletionRequest.model_validate({"prompt": [1], "top_k": -1}).neutral_sampling()


@pytest.mark.parametrize(
    "prompt", [[], [[]], [[1], [2]], ["1"], [1.5], [True], "text", None, [[1, [2]]]]
)
def test_prompts_that_are_not_one_list_of_token_ids_are_refused(prompt: object) -> None:
    with pytest.raises(ValidationError):
        CompletionRequest.model_validate({"prompt": prompt})


@pytest.mark.parametrize("field", [{"max_tokens": 0}, {"seed": -1}, {"logprobs": -1}])
def test_out_of_range_numbers_are_refused(field: dict[str, int]) -> None:
    with pytest.raises(ValidationError):
        CompletionRequest.model_validate({"prompt": [1], **field})


@given(st.lists(st.integers(0, 6), max_size=60).map(sorted))
def test_spans_tile_the_output_one_per_version_run(versions: list[int]) -> None:
    spans = spans_from_versions([str(v) for v in versions])
    assert [s.start for s in spans] == [0, *(s.end for s in spans[:-1])][: len(spans)]
    assert (spans[-1].end if spans else 0) == len(versions)
    assert [int(s.version) for s in spans] == sorted(set(versions))
    rebuilt = [int(s.version) for s in spans for _ in range(s.end - s.start)]
    assert rebuilt == versions
