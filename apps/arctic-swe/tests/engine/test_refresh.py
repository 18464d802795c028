"""Weight refresh: no cache computed under the old weights survives an invalidating refresh
(parked sequences are released, sequences in mid-turn re-prefilled), the stale-cache ablation
keeps them, bad refreshes change nothing (Arctic-SWE §3.3; ARCHITECTURE.md §6)."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path

import pytest
import torch
from transformers import Qwen3_5ForCausalLM

from arctic_swe.engine import EngineConfig, Generation, RefreshError, TorchEngine
from arctic_swe.model import assign_weights, save_policy
from load_router import GenerateRequest, GenerateResult, Lease, RefreshMode, RefreshReport, Router

from .conftest import full_logprobs, perturbed, tiny_model

PROMPTS = [[3, 14, 15, 92, 65], [35, 89, 79], [32, 38, 46, 26, 43, 38, 32]]
OBSERVATION = [50, 51, 52, 53]


def request(prompt: list[int], max_new: int) -> GenerateRequest:
    return GenerateRequest(rollout_index=0, prompt_ids=tuple(prompt), max_new_tokens=max_new)


def updated(model: Qwen3_5ForCausalLM, weights: dict[str, torch.Tensor]) -> Qwen3_5ForCausalLM:
    other = copy.deepcopy(model)
    assign_weights(other, weights)
    return other


async def two_turns(
    engine: TorchEngine, refresh: object, invalidate: bool
) -> tuple[list[list[int]], list[Generation]]:
    """Turn 1 under version 0 (sequences parked), refresh to version 1, turn 2 continues."""
    first = await asyncio.gather(*(engine.generate_detailed(request(p, 6)) for p in PROMPTS))
    histories = [p + list(t.token_ids) + OBSERVATION for p, t in zip(PROMPTS, first, strict=True)]
    await engine.refresh_weights(refresh, 1, invalidate_caches=invalidate)  # type: ignore[arg-type]
    second = await asyncio.gather(*(engine.generate_detailed(request(h, 6)) for h in histories))
    return histories, list(second)


def max_error(model: torch.nn.Module, history: list[int], turn: Generation) -> float:
    reference = full_logprobs(model, history + list(turn.token_ids), len(history))
    return float((torch.tensor(turn.logprobs, dtype=torch.float64) - reference).abs().max())


def test_after_refresh_a_parked_sequence_continues_exactly_as_a_fresh_prefill_under_new_weights(
    tmp_path: Path,
) -> None:
    model = tiny_model()
    new_weights = perturbed(model, seed=1)
    new_model = updated(model, new_weights)
    checkpoint = save_policy(new_model, tmp_path / "v1")
    engine = TorchEngine(copy.deepcopy(model), EngineConfig(capacity=4, seed=9))

    async def scenario() -> tuple[list[list[int]], list[Generation]]:
        histories, turns = await two_turns(engine, str(checkpoint), invalidate=True)
        assert engine.last_refresh is not None
        # every sequence was parked between its turns: released, nothing recomputed eagerly
        assert engine.last_refresh.released == len(PROMPTS)
        assert engine.last_refresh.reprefilled_tokens == 0
        return histories, turns

    histories, turns = asyncio.run(scenario())
    assert engine.version == 1
    for history, turn in zip(histories, turns, strict=True):
        assert set(turn.versions) == {1}
        assert turn.cached_prompt_tokens == 0  # prefilled afresh under the new weights
        assert max_error(new_model, history, turn) < 2e-5
    # …and it is the same distribution a fresh engine prefilling under the new weights samples:
    fresh = TorchEngine(copy.deepcopy(new_model), EngineConfig(capacity=4))
    again = asyncio.run(_regenerate(fresh, histories, turns))
    for turn, redo in zip(turns, again, strict=True):
        assert redo.token_ids == turn.token_ids
        assert max(abs(a - b) for a, b in zip(redo.logprobs, turn.logprobs, strict=True)) < 1e-5


async def _regenerate(
    engine: TorchEngine, histories: list[list[int]], turns: list[Generation]
) -> list[Generation]:
    return list(
        await asyncio.gather(
            *(
                engine.generate_detailed(request(h, 6), seed=t.seed)
                for h, t in zip(histories, turns, strict=True)
            )
        )
    )


def test_stale_cache_ablation_samples_from_a_mixed_state() -> None:
    model = tiny_model()
    new_weights = perturbed(model, seed=1)
    new_model = updated(model, new_weights)
    engine = TorchEngine(copy.deepcopy(model), EngineConfig(capacity=4))
    histories, turns = asyncio.run(two_turns(engine, new_weights, invalidate=False))
    errors = [max_error(new_model, h, t) for h, t in zip(histories, turns, strict=True)]
    # every sequence is off by far more than the FP32 floor (< 2e-5) of the exact path
    assert min(errors) > 1e-4, errors
    assert max(errors) > 1e-3, errors
    assert engine.last_refresh is not None
    assert engine.last_refresh.reprefilled_tokens == 0
    assert all(set(t.versions) == {1} for t in turns)  # labelled new, computed partly old


def test_refresh_during_generation_switches_versions_between_two_steps() -> None:
    model = tiny_model()
    new_weights = perturbed(model, seed=2)
    new_model = updated(model, new_weights)
    engine = TorchEngine(copy.deepcopy(model), EngineConfig(capacity=2))
    prompt = [9, 8, 7, 6]

    async def scenario() -> Generation:
        task = asyncio.ensure_future(engine.generate_detailed(request(prompt, 60)))
        while engine.counters.generated_tokens < 5:
            await asyncio.sleep(0.001)
        await engine.refresh_weights(new_weights, 1)
        return await task

    turn = asyncio.run(scenario())
    assert engine.last_refresh is not None
    assert engine.last_refresh.released == 0  # the sequence was decoding: kept, recomputed
    assert engine.last_refresh.reprefilled_tokens >= len(prompt) + 4
    switch = turn.versions.index(1)
    assert 0 < switch < len(turn.versions)
    assert set(turn.versions[:switch]) == {0}
    assert set(turn.versions[switch:]) == {1}
    tokens = prompt + list(turn.token_ids)
    recorded = torch.tensor(turn.logprobs, dtype=torch.float64)
    old = full_logprobs(model, tokens, len(prompt))
    new = full_logprobs(new_model, tokens, len(prompt))
    assert torch.allclose(recorded[:switch], old[:switch], atol=2e-5)
    assert torch.allclose(recorded[switch:], new[switch:], atol=2e-5)  # no stale state after
    assert asyncio.run(_protocol_version(engine, prompt)) == 1


async def _protocol_version(engine: TorchEngine, prompt: list[int]) -> int:
    return (await engine.generate(request(prompt, 2))).policy_version


def test_bad_refreshes_change_nothing(tmp_path: Path) -> None:
    model = tiny_model()
    engine = TorchEngine(copy.deepcopy(model), EngineConfig(capacity=2))

    async def scenario() -> tuple[list[int], Generation]:
        first = await engine.generate_detailed(request(PROMPTS[0], 5))
        with pytest.raises(RefreshError, match="not newer"):
            await engine.refresh(str(tmp_path), 0)
        with pytest.raises(RefreshError, match="not found"):
            await engine.refresh(str(tmp_path / "missing"), 1)
        wrong = perturbed(model, 3) | {"model.norm.weight": torch.zeros(3)}
        with pytest.raises(RefreshError, match="shape"):
            await engine.refresh_weights(wrong, 1)
        with pytest.raises(RefreshError, match="path"):
            await engine.refresh("", 1)
        history = PROMPTS[0] + list(first.token_ids) + OBSERVATION
        return history, await engine.generate_detailed(request(history, 5))

    history, second = asyncio.run(scenario())
    assert engine.version == 0
    assert set(second.versions) == {0}
    assert second.cached_prompt_tokens > 0  # the parked cache survived the failed refreshes
    assert max_error(model, history, second) < 2e-5


def test_protocol_result_carries_the_version_of_every_token_across_a_mid_turn_refresh() -> None:
    model = tiny_model()
    new_weights = perturbed(model, seed=3)
    engine = TorchEngine(copy.deepcopy(model), EngineConfig(capacity=2))
    prompt = [4, 5, 6, 7]

    async def scenario() -> GenerateResult:
        task = asyncio.ensure_future(engine.generate(request(prompt, 60)))
        while engine.counters.generated_tokens < 4:
            await asyncio.sleep(0.001)
        await engine.refresh_weights(new_weights, 1)
        return await task

    result = asyncio.run(scenario())
    versions = result.token_versions
    assert len(versions) == len(result.token_ids) == len(result.logprobs)
    switch = versions.index(1)
    assert 0 < switch < len(versions)  # the version changed inside the turn
    assert versions == (0,) * switch + (1,) * (len(versions) - switch)
    assert result.policy_version == 1  # the newest token's version


def test_router_inflight_refresh_reprefills_a_running_turn_under_the_new_weights(
    tmp_path: Path,
) -> None:
    """The router refreshes the engine *under* a running turn (no drain): tokens after the
    refresh are exactly the new model's, tokens before keep the old version, and the lease
    records the switch inside the turn."""
    model = tiny_model()
    new_model = updated(model, perturbed(model, seed=4))
    checkpoint = save_policy(new_model, tmp_path / "v1")
    engines = [
        TorchEngine(copy.deepcopy(model), EngineConfig(engine_id=f"e{i}", capacity=2))
        for i in range(2)
    ]
    router = Router(engines)
    prompt = [11, 12, 13, 14, 15]

    async def scenario() -> tuple[GenerateResult, RefreshReport, Lease]:
        lease = await router.acquire("g", 1)
        engine = next(e for e in engines if e.engine_id == lease.engine_id)
        turn = asyncio.ensure_future(lease.generate(request(prompt, 60)))
        while engine.counters.generated_tokens < 4:
            await asyncio.sleep(0.001)
        report = await router.refresh(str(checkpoint), 1, mode="inflight")
        assert not turn.done()  # the refresh did not wait for the turn
        return await turn, report, lease

    result, report, lease = asyncio.run(scenario())
    assert report.mode is RefreshMode.INFLIGHT
    assert set(report.refreshed) == {"e0", "e1"}
    assert all(e.version == 1 for e in engines)
    switch = result.token_versions.index(1)
    assert 0 < switch < len(result.token_ids)
    assert lease.versions[0].runs == ((0, switch), (1, len(result.token_ids) - switch))
    tokens = prompt + list(result.token_ids)
    recorded = torch.tensor(result.logprobs, dtype=torch.float64)
    old = full_logprobs(model, tokens, len(prompt))
    new = full_logprobs(new_model, tokens, len(prompt))
    assert torch.allclose(recorded[:switch], old[:switch], atol=2e-5)
    assert torch.allclose(recorded[switch:], new[switch:], atol=2e-5)
    assert not torch.allclose(old[switch:], new[switch:], atol=1e-3)  # the test can tell


def test_a_relabel_changes_the_version_of_later_tokens_only_and_never_goes_back() -> None:
    """``relabel`` (behind ``/update_weight_version``): same weights, so the same seeded turn
    samples the same tokens with the same log-probs, now under the new version."""
    engine = TorchEngine(tiny_model(), EngineConfig(capacity=2, seed=3))
    seeded = GenerateRequest(rollout_index=0, prompt_ids=(4, 5, 6), max_new_tokens=6, seed=9)

    async def scenario() -> tuple[GenerateResult, GenerateResult]:
        before = await engine.generate(seeded)
        await engine.relabel(4)
        after = await engine.generate(seeded)
        for stale in (4, 3, True):
            with pytest.raises(RefreshError):
                await engine.relabel(stale)  # type: ignore[arg-type]
        with pytest.raises(RefreshError, match="not newer"):
            await engine.refresh_weights({}, 2)
        await engine.close()
        return before, after

    before, after = asyncio.run(scenario())
    assert before.token_versions == (0,) * 6
    assert after.token_versions == (4,) * 6
    assert after.token_ids == before.token_ids
    assert after.logprobs == before.logprobs
    assert engine.version == 4
