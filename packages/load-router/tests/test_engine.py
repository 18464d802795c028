"""The Engine protocol and its request/result records."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st

from load_router import (
    Engine,
    GenerateRequest,
    GenerateResult,
    InvalidArgumentError,
    PlacementOnlyEngine,
)


def test_fake_engine_satisfies_the_protocol(engines: list[object]) -> None:
    assert all(isinstance(engine, Engine) for engine in engines)


def test_object_without_refresh_is_not_an_engine() -> None:
    class NoRefresh:
        engine_id = "x"
        capacity = 1
        in_flight = 0

        async def generate(self, request: GenerateRequest) -> GenerateResult:
            raise AssertionError

    assert not isinstance(NoRefresh(), Engine)


def test_result_needs_one_logprob_per_token() -> None:
    with pytest.raises(InvalidArgumentError, match="2 tokens but 1 log-probs"):
        GenerateResult(token_ids=(1, 2), logprobs=(-0.1,), policy_version=0)


def test_request_rejects_negative_token_ids_and_empty_budget() -> None:
    with pytest.raises(InvalidArgumentError):
        GenerateRequest(rollout_index=0, prompt_ids=(1, -2), max_new_tokens=4)
    with pytest.raises(ValueError, match="max_new_tokens"):
        GenerateRequest(rollout_index=0, prompt_ids=(1,), max_new_tokens=0)


def test_request_seed_is_optional_and_non_negative() -> None:
    assert GenerateRequest(rollout_index=0, prompt_ids=(1,), max_new_tokens=1).seed is None
    assert GenerateRequest(rollout_index=0, prompt_ids=(1,), max_new_tokens=1, seed=7).seed == 7
    with pytest.raises(ValueError, match="seed"):
        GenerateRequest(rollout_index=0, prompt_ids=(1,), max_new_tokens=1, seed=-1)


def test_request_converts_lists_to_tuples() -> None:
    request = GenerateRequest(rollout_index=1, prompt_ids=[1, 2, 3], max_new_tokens=2)  # type: ignore[arg-type]
    assert request.prompt_ids == (1, 2, 3)


def test_placement_only_engine_is_an_engine_that_refuses_to_generate() -> None:
    engine = PlacementOnlyEngine("p0", 3)
    assert isinstance(engine, Engine)
    assert (engine.engine_id, engine.capacity, engine.in_flight) == ("p0", 3, 0)
    with pytest.raises(RuntimeError, match="placement-only"):
        asyncio.run(
            engine.generate(GenerateRequest(rollout_index=0, prompt_ids=(1,), max_new_tokens=1))
        )
    with pytest.raises(RuntimeError, match="placement-only"):
        asyncio.run(engine.refresh("w", 1))


# ------------------------------------------------------------------ per-token versions
_versions_runs = st.lists(st.integers(0, 6), min_size=1, max_size=12).map(sorted)


@given(_versions_runs)
def test_valid_token_versions_are_kept_token_for_token(versions: list[int]) -> None:
    n = len(versions)
    result = GenerateResult(
        token_ids=(1,) * n,
        logprobs=(-0.5,) * n,
        policy_version=versions[-1],
        token_versions=versions,  # type: ignore[arg-type]
    )
    assert result.token_versions == tuple(versions)
    assert result.policy_version == max(versions)


@given(st.integers(0, 8), st.integers(0, 5))
def test_missing_token_versions_default_to_the_policy_version(n: int, version: int) -> None:
    result = GenerateResult(token_ids=(3,) * n, logprobs=(0.0,) * n, policy_version=version)
    assert result.token_versions == (version,) * n


@given(st.lists(st.integers(-2, 6), min_size=1, max_size=10), st.integers(0, 6), st.integers(-1, 1))
def test_token_versions_validator_accepts_exactly_the_contract(
    versions: list[int], newest: int, length_delta: int
) -> None:
    n = max(0, len(versions) + length_delta)
    ok = (
        len(versions) == n
        and all(v >= 0 for v in versions)
        and versions == sorted(versions)
        and versions[-1] == newest
    )
    make = lambda: GenerateResult(  # noqa: E731
        token_ids=(1,) * n,
        logprobs=(0.0,) * n,
        policy_version=newest,
        token_versions=versions,  # type: ignore[arg-type]
    )
    if ok:
        assert make().token_versions == tuple(versions)
    else:
        with pytest.raises(InvalidArgumentError, match=r"token version|newest token"):
            make()


def test_token_versions_errors_name_the_problem() -> None:
    with pytest.raises(InvalidArgumentError, match="2 tokens but 1 token versions"):
        GenerateResult(token_ids=(1, 2), logprobs=(0.0, 0.0), policy_version=1, token_versions=(1,))
    with pytest.raises(InvalidArgumentError, match="decrease"):
        GenerateResult(
            token_ids=(1, 2), logprobs=(0.0, 0.0), policy_version=1, token_versions=(1, 0)
        )
    with pytest.raises(
        InvalidArgumentError, match="newest token's version 1 is not the policy_version 2"
    ):
        GenerateResult(
            token_ids=(1, 2), logprobs=(0.0, 0.0), policy_version=2, token_versions=(1, 1)
        )
