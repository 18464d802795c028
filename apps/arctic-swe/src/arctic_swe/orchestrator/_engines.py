"""The run's inference engines, in-process or over HTTP, behind one ``load_router.Engine`` list.

``engine.kind = "inprocess"`` builds ``engine.engines`` torch engines in this process (deep
copies of the trainer's policy). ``engine.kind = "http"`` drives engine servers over the
vLLM-compatible protocol: the ones already running at ``engine.urls``, or ``engine.launch``
``arctic-swe serve`` processes this run starts on 127.0.0.1 (and stops on exit). The loop
cannot tell the two apart: both are routed, refreshed and marked down the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch import nn

from arctic_swe.config import RunConfig, RunDir
from arctic_swe.engine import EngineConfig, TorchEngine, derive_seed
from arctic_swe.orchestrator._launch import LaunchError, ServerFleet, ServerSpec
from arctic_swe.transfer import WeightSender
from load_router import Engine

if TYPE_CHECKING:
    from arctic_swe.engine import HttpEngine

#: Build one engine: ``(index, model copy, engine config, version) -> Engine``.
EngineFactory = Callable[[int, nn.Module, EngineConfig, int], Engine]


class EngineSetupError(RuntimeError):
    """The run's engines could not be brought up (server did not start or answer, or refused
    the run's weights)."""


def torch_engine(index: int, model: nn.Module, config: EngineConfig, version: int) -> Engine:
    """The default :data:`EngineFactory`: an in-process ``TorchEngine`` on ``model`` at policy
    ``version`` (``index``, the engine's place in the set, is for factories that need it)."""
    return TorchEngine(model, config, version=version)


@dataclass(frozen=True)
class EngineInputs:
    """What every kind of engine needs from the run: the policy to serve (in memory for
    in-process engines, on disk for servers), the stop token, the version the trainer is at
    and its current weights (written once for servers that must catch up on a resume)."""

    model: nn.Module
    policy_dir: Path
    stop_id: int
    version: int
    weights: Callable[[], dict[str, torch.Tensor]]
    #: the trainer side of ``engine.weight_transfer = "nccl"`` (None for "reload")
    weight_sender: WeightSender | None = None


@dataclass
class EngineSet:
    """The engines and, for ``engine.launch``, the server processes behind them."""

    engines: list[Engine]
    fleet: ServerFleet | None = None


@asynccontextmanager
async def open_engines(
    config: RunConfig, run: RunDir, inputs: EngineInputs, factory: EngineFactory = torch_engine
) -> AsyncIterator[EngineSet]:
    """Bring the configured engines up; on exit close them and stop launched servers."""
    async with AsyncExitStack() as stack:
        if config.engine.kind == "http":
            engine_set = await _http_engines(config, run, inputs, stack)
        else:
            engine_set = EngineSet(_inprocess_engines(config, inputs, factory))
            stack.push_async_callback(_close_all, engine_set.engines)
        yield engine_set


def _inprocess_engines(
    config: RunConfig, inputs: EngineInputs, factory: EngineFactory
) -> list[Engine]:
    return [
        factory(
            index,
            copy.deepcopy(inputs.model),
            EngineConfig(
                engine_id=f"torch-{index}",
                capacity=config.engine.capacity,
                seed=derive_seed(config.run.seed, 1000 * inputs.version + index),
                stop_token_ids=(inputs.stop_id,),
                state_dtype=torch.float32 if config.trainer.fp32_numerics else torch.bfloat16,
                # the ablation's engine also computes in bf16 (weights, activations)
                compute_dtype=None if config.trainer.fp32_numerics else torch.bfloat16,
            ),
            inputs.version,
        )
        for index in range(config.engine.engines)
    ]


async def _http_engines(
    config: RunConfig, run: RunDir, inputs: EngineInputs, stack: AsyncExitStack
) -> EngineSet:
    from arctic_swe.engine import HttpEngine, HttpEngineConfig  # the client needs httpx

    section = config.engine
    fleet: ServerFleet | None = None
    urls = section.urls
    if section.launch:
        spec = server_spec(config, inputs.policy_dir)
        ids = [f"http-{i}" for i in range(section.launch)]
        log_dir = run.root / "engines"
        fleet = ServerFleet(spec, ids, log_dir, startup_timeout=section.startup_timeout_s)
        try:
            await stack.enter_async_context(fleet)
        except LaunchError as exc:
            raise EngineSetupError(str(exc)) from exc
        urls = fleet.urls
    client = HttpEngineConfig(
        request_timeout_s=section.timeout_s,
        control_timeout_s=section.timeout_s,
        stop_token_ids=(inputs.stop_id,),
        weight_transfer=section.weight_transfer,  # type: ignore[arg-type]  # validated
    )
    engines = [
        HttpEngine(
            f"http-{i}",
            url,
            capacity=section.capacity,
            config=client,
            weight_sender=inputs.weight_sender,
        )
        for i, url in enumerate(urls)
    ]
    stack.push_async_callback(_close_all, list(engines))
    await _await_ready(engines, urls, section.startup_timeout_s)
    if inputs.version > 0:  # a resumed run: servers start from the warm-start policy
        behind = [e for e in engines if await e.weight_version() != inputs.version]
        await _catch_up(list(behind), run, inputs)
    return EngineSet(list(engines), fleet)


def server_spec(config: RunConfig, policy_dir: Path) -> ServerSpec:
    """The ``arctic-swe serve`` processes of ``engine.launch``: the run's capacity and threads,
    and the recurrent-state dtype ``trainer.fp32_numerics`` asks of every engine."""
    return ServerSpec(
        policy_dir,
        config.engine.capacity,
        config.engine.serve_threads,
        state_dtype="float32" if config.trainer.fp32_numerics else "bfloat16",
    )


async def _await_ready(engines: list[HttpEngine], urls: tuple[str, ...], timeout: float) -> None:
    outcomes = await asyncio.gather(
        *(engine.wait_ready(timeout) for engine in engines), return_exceptions=True
    )
    for url, outcome in zip(urls, outcomes, strict=True):
        if isinstance(outcome, BaseException):
            raise EngineSetupError(f"engine at {url} is not ready: {outcome}") from outcome


async def _catch_up(engines: list[Engine], run: RunDir, inputs: EngineInputs) -> None:
    """Load the trainer's weights at ``inputs.version`` into every server that is not there."""
    if not engines:
        return
    from arctic_swe._published import publish

    path = await asyncio.to_thread(publish, inputs.weights(), run.root / "weights", inputs.version)
    outcomes = await asyncio.gather(
        *(engine.refresh(str(path), inputs.version) for engine in engines),
        return_exceptions=True,
    )
    for engine, outcome in zip(engines, outcomes, strict=True):
        if isinstance(outcome, BaseException):
            raise EngineSetupError(
                f"engine {engine.engine_id} refused the run's weights (version "
                f"{inputs.version}): {outcome}"
            ) from outcome


async def _close_all(engines: list[Engine]) -> None:
    for engine in engines:
        close = getattr(engine, "aclose", None) or getattr(engine, "close", None)
        if close is not None:
            with contextlib.suppress(Exception):
                await close()
