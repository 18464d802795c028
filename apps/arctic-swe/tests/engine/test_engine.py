"""TorchEngine: recorded log-probs, batching equivalence, stops, prefix reuse, bad input."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

import attrs
import pytest
import torch
from transformers import Qwen3_5ForCausalLM

from arctic_swe.engine import (
    EngineClosedError,
    EngineConfig,
    EngineError,
    Generation,
    RequestError,
    TorchEngine,
)
from load_router import Engine, GenerateRequest, Router

from .conftest import VOCAB, full_logprobs, tiny_model

T = TypeVar("T")


def run(factory: Callable[[], Awaitable[T]]) -> T:
    async def main() -> T:
        return await factory()

    return asyncio.run(main())


def request(prompt: list[int] | tuple[int, ...], max_new: int, index: int = 0) -> GenerateRequest:
    return GenerateRequest(rollout_index=index, prompt_ids=tuple(prompt), max_new_tokens=max_new)


def prompts(count: int, seed: int = 0) -> list[list[int]]:
    generator = torch.Generator().manual_seed(seed)
    return [
        torch.randint(0, VOCAB, (int(n),), generator=generator).tolist()
        for n in torch.randint(3, 20, (count,), generator=generator)
    ]


async def generate_all(
    engine: TorchEngine, requests: list[GenerateRequest], seeds: list[int]
) -> list[Generation]:
    return list(
        await asyncio.gather(
            *(engine.generate_detailed(r, seed=s) for r, s in zip(requests, seeds, strict=True))
        )
    )


def test_engine_satisfies_the_load_router_protocol(model: Qwen3_5ForCausalLM) -> None:
    engine = TorchEngine(model, EngineConfig(engine_id="e7", capacity=3))
    assert isinstance(engine, Engine)
    assert (engine.engine_id, engine.capacity, engine.in_flight) == ("e7", 3, 0)


def test_recorded_logprobs_equal_a_full_forward_on_the_same_tokens(
    model: Qwen3_5ForCausalLM,
) -> None:
    engine = TorchEngine(model, EngineConfig(capacity=8))
    starts = prompts(6)
    turns = run(lambda: generate_all(engine, [request(p, 12) for p in starts], list(range(6))))
    for prompt, turn in zip(starts, turns, strict=True):
        assert len(turn.token_ids) == len(turn.logprobs) == len(turn.versions) == 12
        assert set(turn.versions) == {0}
        reference = full_logprobs(model, prompt + list(turn.token_ids), len(prompt))
        recorded = torch.tensor(turn.logprobs, dtype=torch.float64)
        assert torch.allclose(recorded, reference, atol=2e-5), (recorded - reference).abs().max()


def test_batched_and_single_sequence_runs_agree(model: Qwen3_5ForCausalLM) -> None:
    starts = prompts(5, seed=1)
    requests = [request(p, 10, i) for i, p in enumerate(starts)]
    seeds = [101, 102, 103, 104, 105]
    together = run(lambda: generate_all(TorchEngine(model), requests, seeds))
    alone = [
        run(lambda r=r, s=s: generate_all(TorchEngine(model), [r], [s]))[0]  # type: ignore[misc]
        for r, s in zip(requests, seeds, strict=True)
    ]
    for batched, single in zip(together, alone, strict=True):
        assert batched.token_ids == single.token_ids
        assert (
            max(abs(a - b) for a, b in zip(batched.logprobs, single.logprobs, strict=True)) < 1e-5
        )


def test_same_seed_reproduces_a_turn(model: Qwen3_5ForCausalLM) -> None:
    engine_a, engine_b = (
        TorchEngine(model, EngineConfig(seed=5)),
        TorchEngine(model, EngineConfig(seed=5)),
    )
    req = [request([1, 2, 3], 15)]
    first = run(lambda: engine_a.generate(req[0]))
    second = run(lambda: engine_b.generate(req[0]))
    assert first == second
    third = run(lambda: engine_a.generate(req[0]))  # the next request draws a new stream
    assert third.token_ids != first.token_ids


def test_a_request_seed_fixes_the_turn_on_any_engine(model: Qwen3_5ForCausalLM) -> None:
    """``GenerateRequest.seed`` overrides the engine's own stream: different engine seeds and a
    different request history still sample the same turn."""
    engine_a, engine_b = (
        TorchEngine(model, EngineConfig(seed=1)),
        TorchEngine(model, EngineConfig(seed=2)),
    )
    seeded = attrs.evolve(request([1, 2, 3], 15), seed=99)
    run(lambda: engine_b.generate(request([4, 5], 3)))  # engine b's counter moves on
    first = run(lambda: engine_a.generate(seeded))
    second = run(lambda: engine_b.generate(seeded))
    assert first == second
    others = [run(lambda s=s: engine_a.generate(attrs.evolve(seeded, seed=s))) for s in range(5)]
    assert any(other.token_ids != first.token_ids for other in others)


def test_stop_tokens_end_the_turn_and_are_emitted(model: Qwen3_5ForCausalLM) -> None:
    stops = tuple(range(0, VOCAB, 3))  # a third of the vocabulary: stops come quickly
    engine = TorchEngine(model, EngineConfig(stop_token_ids=stops, capacity=16))
    turns = run(
        lambda: generate_all(engine, [request([4, 5], 40, i) for i in range(16)], list(range(16)))
    )
    stopped = [t for t in turns if t.finish_reason == "stop"]
    assert stopped, "no turn hit a stop token"
    for turn in turns:
        assert all(token not in stops for token in turn.token_ids[:-1])
        if turn.finish_reason == "stop":
            assert turn.token_ids[-1] in stops
        else:
            assert turn.finish_reason == "max_tokens"
            assert len(turn.token_ids) == 40
    override = run(
        lambda: engine.generate_detailed(request([4, 5], 30), stop_token_ids=range(VOCAB))
    )
    assert (len(override.token_ids), override.finish_reason) == (1, "stop")


def test_max_tokens_and_context_limit(model: Qwen3_5ForCausalLM) -> None:
    engine = TorchEngine(model, EngineConfig(max_seq_len=20))
    capped = run(lambda: engine.generate_detailed(request([1] * 5, 3)))
    assert (len(capped.token_ids), capped.finish_reason) == (3, "max_tokens")
    full = run(lambda: engine.generate_detailed(request([1] * 12, 100)))
    assert full.finish_reason == "context"
    assert 12 + len(full.token_ids) == 20


def test_next_turn_reuses_the_parked_history_and_stays_exact(model: Qwen3_5ForCausalLM) -> None:
    engine = TorchEngine(model, EngineConfig(capacity=4))
    prompt = [7, 8, 9, 10]
    first = run(lambda: engine.generate_detailed(request(prompt, 8)))
    history = prompt + list(first.token_ids) + [11, 12, 13]  # + an observation
    second = run(lambda: engine.generate_detailed(request(history, 8)))
    assert second.cached_prompt_tokens == len(prompt) + len(first.token_ids) - 1
    assert engine.resident == 1
    reference = full_logprobs(model, history + list(second.token_ids), len(history))
    assert torch.allclose(torch.tensor(second.logprobs, dtype=torch.float64), reference, atol=2e-5)
    assert run(lambda: engine.forget(history + list(second.token_ids))) == 1
    assert engine.resident == 0


def test_more_requests_than_slots_queue_and_evict_parked_slots(model: Qwen3_5ForCausalLM) -> None:
    engine = TorchEngine(model, EngineConfig(capacity=2))
    starts = prompts(5, seed=3)

    async def scenario() -> tuple[list[Generation], int]:
        tasks = [asyncio.ensure_future(engine.generate_detailed(request(p, 4))) for p in starts]
        await asyncio.sleep(0)
        peak = engine.in_flight
        return list(await asyncio.gather(*tasks)), peak

    turns, peak = run(scenario)
    assert peak == 5
    assert engine.in_flight == 0
    assert engine.resident == 2
    assert engine.counters.evictions == 3
    for prompt, turn in zip(starts, turns, strict=True):
        reference = full_logprobs(model, prompt + list(turn.token_ids), len(prompt))
        assert torch.allclose(
            torch.tensor(turn.logprobs, dtype=torch.float64), reference, atol=2e-5
        )


def test_cancelled_call_frees_its_slot_and_others_finish(model: Qwen3_5ForCausalLM) -> None:
    engine = TorchEngine(model, EngineConfig(capacity=2))

    async def scenario() -> Generation:
        doomed = asyncio.ensure_future(engine.generate_detailed(request([1, 2], 500)))
        survivor = asyncio.ensure_future(engine.generate_detailed(request([3, 4], 6)))
        await asyncio.sleep(0.05)
        doomed.cancel()
        with pytest.raises(asyncio.CancelledError):
            await doomed
        turn = await survivor
        assert engine.in_flight == 0  # the cancelled call stopped counting when it was cancelled
        # The core drops the cancelled job at its next step (it may still be mid-step now).
        for _ in range(500):
            if all(r.job is None for r in engine._core.residents.values()):
                break
            await asyncio.sleep(0.01)
        return turn

    turn = run(scenario)
    assert len(turn.token_ids) == 6
    assert engine.in_flight == 0
    assert all(r.job is None for r in engine._core.residents.values())


def test_abort_ends_running_and_queued_calls_with_their_partial_turns(
    model: Qwen3_5ForCausalLM,
) -> None:
    """vLLM's abort-mode pause: running calls return what they sampled so far ("cancelled"),
    queued ones return empty turns; the parked history makes the continuation cheap and the
    whole turn stays exact."""
    engine = TorchEngine(model, EngineConfig(capacity=1))
    prompt = [5, 6, 7, 8]

    async def scenario() -> tuple[Generation, Generation, int]:
        running = asyncio.ensure_future(engine.generate_detailed(request(prompt, 400), seed=3))
        queued = asyncio.ensure_future(engine.generate_detailed(request([9, 9], 4)))  # no slot
        while engine.counters.generated_tokens < 5:
            await asyncio.sleep(0.001)
        engine.pause()  # abort is a command: it also runs while paused
        count = await engine.abort()
        engine.resume()
        return await running, await queued, count

    partial, empty, count = run(scenario)
    assert count == 2
    assert partial.finish_reason == empty.finish_reason == "cancelled"
    assert 5 <= len(partial.token_ids) < 400
    assert len(partial.logprobs) == len(partial.versions) == len(partial.token_ids)
    assert empty.token_ids == ()
    assert engine.in_flight == 0
    history = prompt + list(partial.token_ids)
    rest = run(lambda: engine.generate_detailed(request(history, 6)))
    assert rest.cached_prompt_tokens == len(history) - 1  # the parked slot, not a re-prefill
    whole = list(partial.logprobs) + list(rest.logprobs)
    reference = full_logprobs(model, history + list(rest.token_ids), len(prompt))
    assert torch.allclose(torch.tensor(whole, dtype=torch.float64), reference, atol=2e-5)


def test_an_idle_engine_gathers_a_burst_into_one_prefill(model: Qwen3_5ForCausalLM) -> None:
    """With an admission window, requests arriving a little apart (as over HTTP) share the
    first prefill forward; without one, the first request starts a step on its own."""

    async def staggered(window: float) -> int:
        engine = TorchEngine(model, EngineConfig(capacity=4, admission_window_s=window))
        calls = []
        for prompt in prompts(4, seed=9):
            calls.append(asyncio.ensure_future(engine.generate_detailed(request(prompt, 3))))
            await asyncio.sleep(0.002)  # arrivals 2 ms apart
        await asyncio.gather(*calls)
        await engine.close()
        return engine.counters.prefill_forwards

    assert run(lambda: staggered(0.05)) == 1
    assert run(lambda: staggered(0.0)) > 1


def test_event_loop_stays_responsive_during_generation(model: Qwen3_5ForCausalLM) -> None:
    engine = TorchEngine(model, EngineConfig(capacity=4))

    async def scenario() -> int:
        ticks = 0
        task = asyncio.ensure_future(engine.generate_detailed(request([1, 2, 3], 60)))
        while not task.done():
            await asyncio.sleep(0.001)
            ticks += 1
        await task
        return ticks

    assert run(scenario) > 5  # the loop kept running while the worker thread decoded


def test_works_behind_the_router(model: Qwen3_5ForCausalLM) -> None:
    async def scenario() -> list[int]:
        engines = [TorchEngine(model, EngineConfig(engine_id=f"e{i}", capacity=4)) for i in (0, 1)]
        router = Router(engines)
        async with router.lease("g0", 3) as lease:
            results = await asyncio.gather(
                *(lease.generate(request([5, 6, 7], 5, i)) for i in range(3))
            )
        return [r.policy_version for r in results]

    assert run(scenario) == [0, 0, 0]


@pytest.mark.parametrize(
    ("prompt", "kwargs", "message"),
    [
        ((), {}, "empty"),
        ((1, VOCAB), {}, "vocab size"),
        ((1,) * 64, {}, "max_seq_len"),
        ((1, 2), {"stop_token_ids": [VOCAB + 1]}, "stop_token_ids"),
        ((1, 2), {"seed": -3}, "seed"),
    ],
)
def test_bad_requests_are_rejected_before_any_work(
    model: Qwen3_5ForCausalLM, prompt: tuple[int, ...], kwargs: dict[str, object], message: str
) -> None:
    engine = TorchEngine(model, EngineConfig(max_seq_len=64))
    req = GenerateRequest(rollout_index=0, prompt_ids=prompt, max_new_tokens=2)
    with pytest.raises(RequestError, match=message):
        run(lambda: engine.generate_detailed(req, **kwargs))  # type: ignore[arg-type]
    assert engine.in_flight == 0
    with pytest.raises(RequestError, match="GenerateRequest"):
        run(lambda: engine.generate("hello"))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "changes",
    [
        {"capacity": 0},
        {"engine_id": ""},
        {"prefill_chunk": 0},
        {"max_seq_len": 1},
        {"prefill_token_budget": 4, "prefill_chunk": 8},
        {"stop_token_ids": (-1,)},
        {"admission_window_s": -0.001},
        {"admission_window_s": 2.0},
    ],
)
def test_bad_engine_config_is_rejected(changes: dict[str, object]) -> None:
    with pytest.raises(EngineError):
        EngineConfig(**changes)  # type: ignore[arg-type]


def test_closed_engine_refuses_work(model: Qwen3_5ForCausalLM) -> None:
    engine = TorchEngine(model)

    async def scenario() -> None:
        await engine.generate(request([1, 2], 2))
        await engine.close()
        await engine.close()  # idempotent
        with pytest.raises(EngineClosedError):
            await engine.generate(request([1, 2], 2))

    run(scenario)


def test_engine_samples_the_models_full_distribution_chi_square() -> None:
    from .conftest import tiny_model

    small = tiny_model(seed=4, vocab=8)
    prompt = [1, 5, 2]
    with torch.no_grad():
        small.model.norm.weight.fill_(1.0)  # moderate: every token has a sizeable probability
        probs = torch.softmax(small(torch.tensor([prompt])).logits[0, -1].double(), -1)
    engine = TorchEngine(small, EngineConfig(capacity=64, seed=21))
    draws = 1500

    async def scenario() -> list[Generation]:
        return list(
            await asyncio.gather(
                *(engine.generate_detailed(request(prompt, 1)) for _ in range(draws))
            )
        )

    counts = torch.zeros(8, dtype=torch.float64)
    for turn in run(scenario):
        counts[turn.token_ids[0]] += 1
        assert abs(turn.logprobs[0] - float(probs[turn.token_ids[0]].log())) < 1e-5
    expected = probs * draws
    rare = expected < 5  # pool sparse cells so the chi-square approximation holds
    observed_cells = [*counts[~rare].tolist(), float(counts[rare].sum())]
    expected_cells = [*expected[~rare].tolist(), float(expected[rare].sum())]
    if expected_cells[-1] == 0:
        observed_cells, expected_cells = observed_cells[:-1], expected_cells[:-1]
    chi2 = sum((o - e) ** 2 / e for o, e in zip(observed_cells, expected_cells, strict=True))
    critical = {1: 10.83, 2: 13.82, 3: 16.27, 4: 18.47, 5: 20.52, 6: 22.46, 7: 24.32}
    assert len(expected_cells) >= 6, expected_cells  # the test must have some power
    assert float(probs.max() / probs.min()) > 1.5  # and the target is not uniform
    assert chi2 < critical[len(expected_cells) - 1], (chi2, observed_cells, expected_cells)


def test_bf16_compute_policy_runs_with_fp32_state_and_tracks_its_full_forward() -> None:
    from arctic_swe.model import build_policy, policy_config

    model = build_policy(policy_config(VOCAB), 0, compute_dtype=torch.bfloat16)
    engine = TorchEngine(model, EngineConfig(capacity=2))
    assert engine._core.pools.recurrent[0].dtype == torch.float32
    assert engine._core.pools.keys[3].dtype == torch.bfloat16
    prompt = [1, 2, 3, 4, 5]
    turn = run(lambda: engine.generate_detailed(request(prompt, 10)))
    reference = full_logprobs(model, prompt + list(turn.token_ids), len(prompt))
    recorded = torch.tensor(turn.logprobs, dtype=torch.float64)
    assert torch.isfinite(recorded).all()
    assert float((recorded - reference).abs().max()) < 5e-2  # bf16 rounding, not a wrong position


def test_engine_can_be_driven_from_successive_event_loops(model: Qwen3_5ForCausalLM) -> None:
    engine = TorchEngine(model, EngineConfig(capacity=2))
    drivers = []
    for _ in range(3):
        turn = run(lambda: engine.generate_detailed(request([1, 2, 3], 3)))
        assert len(turn.token_ids) == 3
        drivers.append(engine._driver)
    assert len({id(d) for d in drivers}) == 3
    for driver in drivers:  # each ended by its loop's shutdown, none by an error
        assert driver is not None
        assert driver.done()
        assert driver.cancelled() or driver.exception() is None


def test_all_engine_compute_runs_on_its_own_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Core construction, every step and every refresh run on one worker thread that the engine
    owns (one OpenMP team per engine), never on the caller's; close stops it."""
    from arctic_swe.engine import _core

    seen: list[tuple[str, int]] = []
    for name in ("__init__", "iterate", "refresh"):
        real = getattr(_core.EngineCore, name)

        def recorded(
            *args: object, _real: Callable[..., object] = real, _name: str = name
        ) -> object:
            seen.append((_name, threading.get_ident()))
            return _real(*args)

        monkeypatch.setattr(_core.EngineCore, name, recorded)
    model = tiny_model(seed=3)
    weights = {k: v.clone() for k, v in model.state_dict().items()}

    async def scenario() -> None:
        engine = TorchEngine(model, EngineConfig(capacity=2))
        await engine.generate_detailed(request([1, 2, 3], 4))
        await engine.refresh_weights(weights, 1)
        await engine.generate_detailed(request([4, 5], 2))
        await engine.close()

    run(scenario)
    assert {name for name, _ in seen} == {"__init__", "iterate", "refresh"}
    threads = {ident for _, ident in seen}
    assert len(threads) == 1
    assert threading.get_ident() not in threads
    assert not any(t.ident in threads for t in threading.enumerate())  # stopped by close()


def test_a_trainer_backpropagates_through_the_engines_model_after_generation() -> None:
    """The engine steps under inference mode; the model, its plan and hybrid-numerics' cached
    constants must stay usable by autograd in the same process (the embedded loop's trainer),
    and an optimizer step must reach the engine's next turn."""
    model = tiny_model(seed=4)
    engine = TorchEngine(model, EngineConfig(capacity=2))
    first = run(lambda: engine.generate_detailed(request([1, 2, 3, 4], 6), seed=5))
    tokens = [1, 2, 3, 4, *first.token_ids]
    logprobs = full_logprobs(model, tokens, 4)
    assert torch.allclose(logprobs, torch.tensor(first.logprobs, dtype=torch.float64), atol=1e-4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    loss = -torch.log_softmax(model(torch.tensor([tokens])).logits[0, :-1], -1).mean()
    loss.backward()
    assert all(p.grad is None or torch.isfinite(p.grad).all() for p in model.parameters())
    optimizer.step()  # in place: the engine's next step must see it

    async def second_turn() -> Generation:
        turn = await engine.generate_detailed(request([1, 2, 3, 4], 6), seed=5)
        await engine.close()
        return turn

    again = run(second_turn)
    after = full_logprobs(model, [1, 2, 3, 4, *again.token_ids], 4)
    assert torch.allclose(after, torch.tensor(again.logprobs, dtype=torch.float64), atol=1e-4)
    assert not torch.allclose(after, logprobs[: len(after)])  # the step changed the policy
