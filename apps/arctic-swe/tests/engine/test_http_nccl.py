"""The NCCL refresh path end to end on CPU: ``HttpEngine`` with ``weight_transfer = "nccl"``
drives a real ``arctic-swe serve`` process through vLLM 0.33's weight-transfer routes while a
:class:`~arctic_swe.transfer.LocalWeightSender` in this process broadcasts over gloo
(Arctic-SWE §3.3): tokens after the refresh are scored by the new weights, before it by the
old; a trainer side that fails is a typed error naming the engine and the route."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterator
from typing import Any

import pytest
import torch

from arctic_swe.engine import HttpEngine, HttpEngineConfig, RefreshError
from arctic_swe.model import assign_weights, save_policy
from arctic_swe.transfer import LocalWeightSender
from load_router import GenerateRequest, GenerateResult

from ..serve.conftest import (
    ServerProcess,
    full_logprobs,
    perturbed_state,
    start_server,
    tiny_policy,
)

NCCL = HttpEngineConfig(weight_transfer="nccl", retries=2, backoff_s=0.05)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    checkpoint = save_policy(tiny_policy(), tmp_path_factory.mktemp("nccl") / "tiny")
    process = start_server(checkpoint, "--capacity", "4")
    try:
        yield process
    finally:
        process.stop()


def _weights_by_version() -> dict[int, dict[str, torch.Tensor]]:
    base = tiny_policy()
    return {1: perturbed_state(base, seed=11), 2: perturbed_state(base, seed=12)}


def _model(state: dict[str, torch.Tensor]) -> torch.nn.Module:
    model = copy.deepcopy(tiny_policy())
    assign_weights(model, state)
    return model


def _errors(result: GenerateResult, prompt: list[int], model: torch.nn.Module) -> torch.Tensor:
    reference = full_logprobs(model, prompt + list(result.token_ids), len(prompt))
    return (torch.tensor(result.logprobs, dtype=torch.float64) - reference).abs()


def test_two_nccl_refreshes_mid_turn_sample_later_tokens_from_the_broadcast_weights(
    served: ServerProcess,
) -> None:
    states = _weights_by_version()
    sender = LocalWeightSender(lambda version: list(states[version].items()), timeout_s=60)
    prompt = [5, 9, 2, 7]

    async def body() -> tuple[list[GenerateResult], list[int]]:
        engine = HttpEngine("nccl-0", served.url, capacity=4, config=NCCL, weight_sender=sender)
        results, labels = [], []
        try:
            for version in (1, 2):
                request = GenerateRequest(
                    rollout_index=0, prompt_ids=tuple(prompt), max_new_tokens=300, seed=version
                )
                before = (await engine.metrics())["arctic_engine_generated_tokens_total"]
                turn = asyncio.ensure_future(engine.generate(request))
                # some tokens under the old weights (counted, not timed: a quiet machine makes
                # 150 tokens in well under a fixed sleep)
                while (await engine.metrics())["arctic_engine_generated_tokens_total"] < before + 5:
                    assert not turn.done(), "the turn ended before the refresh"
                    await asyncio.sleep(0.005)
                await engine.refresh("unused-by-nccl", version)
                results.append(await turn)
                labels.append(await engine.weight_version())
        finally:
            await engine.close()
            sender.close()
        return results, labels

    results, labels = asyncio.run(body())
    assert labels == [1, 2]
    old = tiny_policy()
    for version, result in zip((1, 2), results, strict=True):
        switch = result.token_versions.index(version)
        assert 0 < switch < len(result.token_ids)
        new = _model(states[version])
        assert float(_errors(result, prompt, old)[:switch].max()) < 2e-5
        assert float(_errors(result, prompt, new)[switch:].max()) < 2e-5
        old = new


class _DeadTrainer:
    """A trainer side whose endpoint is unreachable: it fails every call."""

    async def init_info(self, engine_id: str) -> dict[str, Any]:
        raise ConnectionRefusedError(f"trainer endpoint for {engine_id} is unreachable")

    async def connect(self, engine_id: str) -> None:
        raise AssertionError("never reached")

    async def update_info(self, version: int) -> dict[str, Any]:
        raise AssertionError("never reached")

    async def send(self, engine_id: str, version: int) -> None:
        raise AssertionError("never reached")


def test_an_unreachable_trainer_is_a_refresh_error_and_the_engine_keeps_serving(
    served: ServerProcess,
) -> None:
    async def body() -> GenerateResult:
        engine = HttpEngine(
            "nccl-1", served.url, capacity=4, config=NCCL, weight_sender=_DeadTrainer()
        )
        try:
            with pytest.raises(RefreshError, match=r"nccl-1.*init_weight_transfer_engine"):
                await engine.refresh("unused", 7)
            assert not await engine.is_paused()
            request = GenerateRequest(rollout_index=0, prompt_ids=(1, 2), max_new_tokens=3)
            return await engine.generate(request)
        finally:
            await engine.close()

    assert len(asyncio.run(body()).token_ids) == 3


def test_nccl_without_a_sender_is_refused_at_construction() -> None:
    with pytest.raises(Exception, match="weight_sender"):
        HttpEngine("e", "http://127.0.0.1:1", capacity=1, config=NCCL)
