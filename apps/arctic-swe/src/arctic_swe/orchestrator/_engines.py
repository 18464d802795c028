"""The run's inference engines, in-process or over HTTP, behind one list of
:class:`arctic_swe.engine.RunEngine` (routed, refreshed, closed).

``engine.kind`` picks an opener from :data:`ENGINE_OPENERS`. ``"inprocess"`` builds
``engine.engines`` torch engines in this process (deep copies of the trainer's local policy).
``"http"`` drives engine servers over the vLLM-compatible protocol: the ones already running at
``engine.urls``, or ``engine.launch`` ``arctic-swe serve`` processes this run starts on
127.0.0.1 (and stops on exit). The loop cannot tell them apart: all are routed, refreshed and
marked down the same way, with the refresh timeout the opener put on the :class:`EngineSet`.

Adding an engine kind: a module with an :data:`EngineOpener`, one entry in
:data:`ENGINE_OPENERS`, and its name in ``arctic_swe.config``'s ``ENGINE_KINDS`` (the config is
validated below this layer, so it keeps the list of names).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch import nn

from arctic_swe.config import RunConfig, RunDir
from arctic_swe.engine import EngineConfig, RunEngine, TorchEngine, derive_seed
from arctic_swe.orchestrator._launch import LaunchError, ServerFleet, ServerSpec
from arctic_swe.transfer import WeightSender
from arctic_swe.weights import publish, run_weights

if TYPE_CHECKING:
    from arctic_swe.engine import HttpEngine

#: Build one in-process engine: ``(index, model copy, engine config, version) -> RunEngine``.
EngineFactory = Callable[[int, nn.Module, EngineConfig, int], RunEngine]


class EngineSetupError(RuntimeError):
    """The run's engines could not be brought up (server did not start or answer, or refused
    the run's weights)."""


def torch_engine(index: int, model: nn.Module, config: EngineConfig, version: int) -> RunEngine:
    """The default :data:`EngineFactory`: an in-process ``TorchEngine`` on ``model`` at policy
    ``version`` (``index``, the engine's place in the set, is for factories that need it)."""
    return TorchEngine(model, config, version=version)


@dataclass(frozen=True)
class EngineInputs:
    """What every kind of engine needs from the run: the policy to serve (in memory for
    in-process engines — ``None`` when the trainer's model is not in this process — on disk
    for servers), the stop token, the version the trainer is at and its current weights
    (written once for servers that must catch up on a resume)."""

    model: nn.Module | None
    policy_dir: Path
    stop_id: int
    version: int
    weights: Callable[[], dict[str, torch.Tensor]]
    #: the trainer side of ``engine.weight_transfer = "nccl"`` (None for "reload")
    weight_sender: WeightSender | None = None


@dataclass
class EngineSet:
    """The engines, for ``engine.launch`` the server processes behind them, and how long a
    refresh may wait on one engine before it is marked down (``None``: no limit, in process)."""

    engines: list[RunEngine]
    fleet: ServerFleet | None = None
    refresh_timeout: float | None = None


#: Open the engines of one kind: ``(config, run, inputs, factory, stack) -> EngineSet``; the
#: opener registers every cleanup (closing engines, stopping servers) on ``stack``.
EngineOpener = Callable[
    [RunConfig, RunDir, EngineInputs, EngineFactory, AsyncExitStack], Awaitable[EngineSet]
]


@asynccontextmanager
async def open_engines(
    config: RunConfig, run: RunDir, inputs: EngineInputs, factory: EngineFactory = torch_engine
) -> AsyncIterator[EngineSet]:
    """Bring the configured engines up; on exit close them and stop launched servers."""
    opener = ENGINE_OPENERS.get(config.engine.kind)
    if opener is None:
        raise EngineSetupError(f"no engine kind {config.engine.kind!r} ({sorted(ENGINE_OPENERS)})")
    async with AsyncExitStack() as stack:
        yield await opener(config, run, inputs, factory, stack)


async def _open_inprocess(
    config: RunConfig,
    run: RunDir,
    inputs: EngineInputs,
    factory: EngineFactory,
    stack: AsyncExitStack,
) -> EngineSet:
    engines = _inprocess_engines(config, inputs, factory)
    stack.push_async_callback(_close_all, engines)
    return EngineSet(engines)


def _inprocess_engines(
    config: RunConfig, inputs: EngineInputs, factory: EngineFactory
) -> list[RunEngine]:
    model = inputs.model
    if model is None:
        raise EngineSetupError("in-process engines need the trainer's model in this process")
    return [
        factory(
            index,
            copy.deepcopy(model),
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


async def _open_http(
    config: RunConfig,
    run: RunDir,
    inputs: EngineInputs,
    factory: EngineFactory,
    stack: AsyncExitStack,
) -> EngineSet:
    """``factory`` builds in-process engines only: servers are not built here."""
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
    # a server that stops answering during a refresh is marked down, never waited on
    return EngineSet(list(engines), fleet, refresh_timeout=section.timeout_s)


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


async def _catch_up(engines: list[RunEngine], run: RunDir, inputs: EngineInputs) -> None:
    """Load the trainer's weights at ``inputs.version`` into every server that is not there."""
    if not engines:
        return
    try:
        weights = inputs.weights()
    except Exception as exc:  # the trainer side's own error (e.g. no consolidated export)
        raise EngineSetupError(str(exc)) from exc
    path = await asyncio.to_thread(publish, weights, run_weights(run.root), inputs.version)
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


async def _close_all(engines: list[RunEngine]) -> None:
    for engine in engines:
        with contextlib.suppress(Exception):  # one engine's failed close must not skip the rest
            await engine.close()


#: ``engine.kind`` -> how its engines are opened (one entry per kind).
ENGINE_OPENERS: Mapping[str, EngineOpener] = {"inprocess": _open_inprocess, "http": _open_http}
