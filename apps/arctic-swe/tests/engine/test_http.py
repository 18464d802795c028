"""``HttpEngine`` against real ``arctic-swe serve`` processes on 127.0.0.1: the same turns as
the in-process engine, in-flight refresh over HTTP (tokens after it scored exactly by the new
weights, before it by the old; the stale-cache ablation visibly off), typed errors, bounded
failure against a killed or absent server (Arctic-SWE §3.3)."""

from __future__ import annotations

import asyncio
import copy
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import Qwen3_5ForCausalLM

from arctic_swe.engine import (
    EngineConfig,
    EngineUnavailableError,
    HttpEngine,
    HttpEngineConfig,
    RefreshError,
    RequestError,
    TorchEngine,
)
from arctic_swe.model import assign_weights, load_policy, save_policy
from arctic_swe.weights import write_safetensors
from load_router import Engine, GenerateRequest, GenerateResult

from ..serve.conftest import (
    ServerProcess,
    full_logprobs,
    perturbed_state,
    start_server,
    tiny_policy,
)

FAST_FAIL = HttpEngineConfig(retries=2, backoff_s=0.05, backoff_max_s=0.2, connect_timeout_s=2.0)


def request(prompt: list[int], max_new: int, seed: int | None = None) -> GenerateRequest:
    return GenerateRequest(
        rollout_index=0, prompt_ids=tuple(prompt), max_new_tokens=max_new, seed=seed
    )


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_policy(tiny_policy(), tmp_path_factory.mktemp("http") / "tiny")


@pytest.fixture(scope="module")
def served(checkpoint: Path) -> Iterator[ServerProcess]:
    process = start_server(checkpoint, "--capacity", "8")
    try:
        yield process
    finally:
        process.stop()


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


async def _with_engine(url: str, body: Any, config: HttpEngineConfig | None = None) -> Any:
    engine = HttpEngine("http-0", url, capacity=8, config=config)
    try:
        return await body(engine)
    finally:
        await engine.close()


# ---------------------------------------------------------------- generation
PROMPTS = [[3, 14, 15, 92, 65], [35, 89, 79], [32, 38, 46, 26], [7, 7, 7, 7, 7, 7]]


def test_is_a_load_router_engine_and_generates_what_the_in_process_engine_does(
    served: ServerProcess, checkpoint: Path
) -> None:
    requests = [request(p, 10 + i, seed=100 + i) for i, p in enumerate(PROMPTS)]
    seen: list[int] = []

    async def remote(engine: HttpEngine) -> list[GenerateResult]:
        assert isinstance(engine, Engine)
        calls = [asyncio.ensure_future(engine.generate(r)) for r in requests]
        await asyncio.sleep(0.05)
        seen.append(engine.in_flight)
        results = await asyncio.gather(*calls)
        seen.append(engine.in_flight)
        return list(results)

    async def local() -> list[GenerateResult]:
        engine = TorchEngine(load_policy(checkpoint), EngineConfig(capacity=8))
        results = await asyncio.gather(*(engine.generate(r) for r in requests))
        await engine.close()
        return list(results)

    remote_results = run(_with_engine(served.url, remote))
    local_results = run(local())
    assert seen == [len(requests), 0]
    for got, want in zip(remote_results, local_results, strict=True):
        assert got.token_ids == want.token_ids
        assert got.token_versions == want.token_versions == (0,) * len(want.token_ids)
        assert got.policy_version == 0
        # batch composition may differ between the two runs: equal up to FP32 reduction order
        assert max(abs(a - b) for a, b in zip(got.logprobs, want.logprobs, strict=True)) < 1e-5


def test_concurrent_turns_are_spread_over_small_connection_pools(served: ServerProcess) -> None:
    """httpcore scans its whole pool per request event, so a client with all turns in one pool
    pays quadratically; the engine spreads them over pools of 8 connections, least loaded
    first, and every turn still completes."""
    loads: list[list[int]] = []

    async def body(engine: HttpEngine) -> list[GenerateResult]:
        calls = [asyncio.ensure_future(engine.generate(request([i + 1, 2], 2))) for i in range(16)]
        await asyncio.sleep(0)  # every call has picked its pool
        loads.append(list(engine._lane_load))
        results = await asyncio.gather(*calls)
        loads.append(list(engine._lane_load))
        return list(results)

    results = run(_with_engine(served.url, body))  # capacity 8: ceil((8 + 8) / 8) = 2 pools
    assert loads == [[8, 8], [0, 0]]
    assert all(len(r.token_ids) == 2 for r in results)


def test_a_4xx_is_a_request_error_and_the_engine_stays_usable(served: ServerProcess) -> None:
    async def body(engine: HttpEngine) -> GenerateResult:
        with pytest.raises(RequestError, match="outside the vocabulary"):
            await engine.generate(request([1, 2, 10_000], 4))
        assert engine.in_flight == 0
        return await engine.generate(request([1, 2, 3], 4))

    assert len(run(_with_engine(served.url, body)).token_ids) == 4


def test_metrics_and_health(served: ServerProcess) -> None:
    async def body(engine: HttpEngine) -> tuple[bool, dict[str, float], dict[str, float]]:
        healthy = await engine.health()
        before = await engine.metrics()
        await engine.generate(request([5, 5], 6))
        return healthy, before, await engine.metrics()

    healthy, before, after = run(_with_engine(served.url, body))
    assert healthy
    key = "arctic_engine_generated_tokens_total"
    assert after[key] == before[key] + 6
    assert after["arctic_engine_requests_in_flight"] == 0


def test_a_request_held_past_its_timeout_marks_the_engine_unavailable(
    served: ServerProcess,
) -> None:
    config = HttpEngineConfig(request_timeout_s=0.5, retries=3)

    async def body(engine: HttpEngine) -> float:
        await engine._control("POST", "/pause?mode=keep")
        started = time.monotonic()
        try:
            with pytest.raises(EngineUnavailableError, match="timed out"):
                await engine.generate(request([1, 2], 3))
        finally:
            await engine._control("POST", "/resume")
        return time.monotonic() - started

    assert run(_with_engine(served.url, body, config)) < 5.0  # no retry of a held request


def test_a_turn_aborted_by_a_pause_is_continued_into_one_whole_exact_turn(
    served: ServerProcess, weights: Weights
) -> None:
    """Someone pauses the server with ``mode=abort`` mid-turn: the server answers the partial
    turn (``finish_reason: "abort"``), HttpEngine sends the continuation, meets 503s while the
    pause lasts, and after ``/resume`` returns one whole turn scored by the served weights."""
    prompt = [4, 8, 15, 16, 23, 42]
    config = HttpEngineConfig(retries=40, backoff_s=0.05, backoff_max_s=0.1)

    async def body(engine: HttpEngine) -> tuple[GenerateResult, dict[str, float], bool]:
        before = await engine.metrics()
        turn = asyncio.ensure_future(engine.generate(request(prompt, 150, seed=11)))
        while (await engine.metrics())["arctic_engine_generated_tokens_total"] < (
            before["arctic_engine_generated_tokens_total"] + 5
        ):
            assert not turn.done(), "the turn ended before the abort"
            await asyncio.sleep(0.005)
        await engine._control("POST", "/pause?mode=abort")
        await asyncio.sleep(0.3)  # the continuation is refused (503) while paused
        held = not turn.done()
        await engine._control("POST", "/resume")
        result = await turn
        after = await engine.metrics()
        return result, {k: after[k] - before.get(k, 0.0) for k in after}, held

    result, delta, held = run(_with_engine(served.url, body, config))
    assert held
    assert delta["arctic_engine_requests_aborted_total"] == 1
    assert delta["arctic_engine_requests_total"] >= 2  # the partial turn and its continuation
    assert 5 < len(result.token_ids) <= 150
    assert set(result.token_versions) == {weights.version}
    assert float(_errors(result, prompt, weights.model).max()) < 2e-5


# ---------------------------------------------------------------- in-flight refresh
class Weights:
    """The weights the refresh tests' server holds, version by version."""

    def __init__(self) -> None:
        self.model: Qwen3_5ForCausalLM = tiny_policy()
        self.version = 0

    def next(self, seed: int, tmp_path: Path) -> tuple[Path, Qwen3_5ForCausalLM]:
        state = perturbed_state(self.model, seed)
        model = copy.deepcopy(self.model)
        assign_weights(model, state)
        directory = tmp_path / f"policy-v{self.version + 1}"
        write_safetensors(state, directory / "model.safetensors")
        return directory, model


@pytest.fixture(scope="module")
def weights() -> Weights:
    return Weights()


async def _refresh_mid_turn(
    engine: HttpEngine, path: Path, version: int, invalidate: bool, prompt: list[int]
) -> GenerateResult:
    before = (await engine.metrics())["arctic_engine_generated_tokens_total"]
    turn = asyncio.ensure_future(engine.generate(request(prompt, 200, seed=version)))
    while (await engine.metrics())["arctic_engine_generated_tokens_total"] < before + 5:
        assert not turn.done(), "the turn ended before the refresh"
        await asyncio.sleep(0.005)
    await engine.refresh(str(path), version, invalidate_caches=invalidate)
    return await turn


def _split(result: GenerateResult, old: int, new: int) -> int:
    switch = result.token_versions.index(new)
    assert 0 < switch < len(result.token_ids)
    assert set(result.token_versions[:switch]) == {old}
    assert set(result.token_versions[switch:]) == {new}
    assert result.policy_version == new
    return switch


def _errors(result: GenerateResult, prompt: list[int], model: torch.nn.Module) -> torch.Tensor:
    tokens = prompt + list(result.token_ids)
    reference = full_logprobs(model, tokens, len(prompt))
    return (torch.tensor(result.logprobs, dtype=torch.float64) - reference).abs()


def test_refresh_mid_turn_over_http_samples_later_tokens_from_the_new_weights(
    served: ServerProcess, weights: Weights, tmp_path: Path
) -> None:
    prompt = [9, 8, 7, 6, 5]
    path, new_model = weights.next(seed=1, tmp_path=tmp_path)
    version = weights.version + 1

    async def body(engine: HttpEngine) -> tuple[GenerateResult, int, bool]:
        result = await _refresh_mid_turn(engine, path, version, True, prompt)
        return result, await engine.weight_version(), await engine.is_paused()

    result, label, paused = run(_with_engine(served.url, body))
    old_model, weights.model, weights.version = weights.model, new_model, version
    assert label == version
    assert not paused
    switch = _split(result, version - 1, version)
    assert float(_errors(result, prompt, old_model)[:switch].max()) < 2e-5
    assert float(_errors(result, prompt, new_model)[switch:].max()) < 2e-5


def test_stale_cache_ablation_over_http_is_visibly_off_the_new_weights(
    served: ServerProcess, weights: Weights, tmp_path: Path
) -> None:
    prompt = [4, 40, 44, 4, 40]
    path, new_model = weights.next(seed=2, tmp_path=tmp_path)
    version = weights.version + 1

    async def body(engine: HttpEngine) -> GenerateResult:
        return await _refresh_mid_turn(engine, path, version, False, prompt)

    result = run(_with_engine(served.url, body))
    old_model, weights.model, weights.version = weights.model, new_model, version
    switch = _split(result, version - 1, version)
    assert float(_errors(result, prompt, old_model)[:switch].max()) < 2e-5
    stale = _errors(result, prompt, new_model)[switch:]
    assert float(stale.max()) > 1e-4, stale  # sampled on caches computed by the old weights


def test_a_refused_refresh_is_a_refresh_error_and_the_server_resumes_on_old_weights(
    served: ServerProcess, tmp_path: Path
) -> None:
    bad = write_safetensors(
        {"model.norm.weight": torch.ones(3)}, tmp_path / "bad" / "m.safetensors"
    )

    async def body(engine: HttpEngine) -> tuple[int, bool, GenerateResult]:
        label = await engine.weight_version()
        with pytest.raises(RefreshError, match="names missing"):
            await engine.refresh(str(bad.parent), 1000)
        assert await engine.weight_version() == label
        return label, await engine.is_paused(), await engine.generate(request([1, 2], 3))

    label, paused, result = run(_with_engine(served.url, body))
    assert not paused
    assert result.policy_version == label


# ---------------------------------------------------------------- a server that goes away
@pytest.mark.slow  # its own server process: ~45 s on the shared 2-core machine
def test_a_killed_server_raises_engine_unavailable_in_bounded_time(checkpoint: Path) -> None:
    process = start_server(checkpoint, "--capacity", "2")
    try:

        async def body(engine: HttpEngine) -> tuple[float, float, bool]:
            turn = asyncio.ensure_future(engine.generate(request([1, 2, 3], 20_000)))
            while (await engine.metrics())["arctic_engine_generated_tokens_total"] < 3:
                await asyncio.sleep(0.01)
            started = time.monotonic()
            process.kill()
            with pytest.raises(EngineUnavailableError):
                await turn
            lost = time.monotonic() - started
            started = time.monotonic()
            with pytest.raises(EngineUnavailableError, match="failed 3 times"):
                await engine.generate(request([1], 2))
            return lost, time.monotonic() - started, await engine.health()

        lost, refused, healthy = run(_with_engine(process.url, body, FAST_FAIL))
    finally:
        process.stop()
    assert lost < 10.0
    assert refused < 5.0
    assert not healthy


def _closed_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_no_server_at_all_is_engine_unavailable_after_bounded_retries() -> None:
    async def body(engine: HttpEngine) -> float:
        started = time.monotonic()
        with pytest.raises(EngineUnavailableError, match="failed 3 times"):
            await engine.generate(request([1], 2))
        with pytest.raises(EngineUnavailableError, match="not ready"):
            await engine.wait_ready(0.3)
        assert engine.in_flight == 0
        return time.monotonic() - started

    assert run(_with_engine(_closed_port(), body, FAST_FAIL)) < 5.0


def test_bad_construction_is_a_typed_error() -> None:
    with pytest.raises(RequestError, match="capacity"):
        HttpEngine("e", "http://127.0.0.1:1", capacity=0)
    with pytest.raises(RequestError, match="base_url"):
        HttpEngine("e", "127.0.0.1:1", capacity=1)
    with pytest.raises(RequestError, match="retries"):
        HttpEngineConfig(retries=-1)
    with pytest.raises(RequestError, match="request_timeout_s"):
        HttpEngineConfig(request_timeout_s=float("nan"))
