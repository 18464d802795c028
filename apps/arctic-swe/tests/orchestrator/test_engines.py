"""``open_engines``: the configured engines come up (in-process), every kind registered for
every configurable ``engine.kind``, each engine closed through ``RunEngine.close`` on exit, and
HTTP engines that never answer stop the run before any rollout with a clear error, in bounded
time."""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import time
from pathlib import Path

import pytest
import torch

from arctic_swe.config import RunConfig, RunDir, apply_overrides, prepare_run_dir
from arctic_swe.config._schema import ENGINE_KINDS as CONFIG_ENGINE_KINDS
from arctic_swe.engine import EngineConfig, RunEngine, TorchEngine
from arctic_swe.model import build_policy, policy_config, save_policy
from arctic_swe.orchestrator._engines import (
    ENGINE_OPENERS,
    EngineInputs,
    EngineSetupError,
    open_engines,
    server_spec,
)
from arctic_swe.orchestrator._launch import serve_command


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> EngineInputs:
    model = build_policy(policy_config(96), 0)
    policy_dir = save_policy(model, tmp_path_factory.mktemp("p") / "policy")
    return EngineInputs(model, policy_dir, stop_id=3, version=0, weights=dict)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _config(tmp_path: Path, *assignments: str) -> tuple[RunConfig, RunDir]:
    config = apply_overrides(RunConfig(), list(assignments))
    return config, prepare_run_dir(tmp_path / "run", config, resume=False)


def test_every_configurable_engine_kind_has_an_opener() -> None:
    assert set(ENGINE_OPENERS) == set(CONFIG_ENGINE_KINDS)


def test_every_engine_is_closed_on_exit_even_when_one_close_fails(
    inputs: EngineInputs, tmp_path: Path
) -> None:
    config, run = _config(tmp_path, "engine.engines=3")
    closed: list[str] = []

    class Recorded(TorchEngine):
        async def close(self) -> None:
            closed.append(self.engine_id)
            await super().close()
            if self.engine_id == "torch-0":
                raise RuntimeError("a failing close must not skip the others")

    def factory(index: int, model: torch.nn.Module, cfg: EngineConfig, version: int) -> RunEngine:
        return Recorded(model, cfg, version=version)

    async def scenario() -> float | None:
        async with open_engines(config, run, inputs, factory) as engine_set:
            assert all(isinstance(e, RunEngine) for e in engine_set.engines)
            return engine_set.refresh_timeout

    assert asyncio.run(scenario()) is None  # in process: a refresh is never timed out
    assert closed == ["torch-0", "torch-1", "torch-2"]


def test_inprocess_engines_need_a_local_model(inputs: EngineInputs, tmp_path: Path) -> None:
    config, run = _config(tmp_path)

    async def scenario() -> None:
        async with open_engines(config, run, dataclasses.replace(inputs, model=None)):
            pass

    with pytest.raises(EngineSetupError, match="need the trainer's model"):
        asyncio.run(scenario())


def test_inprocess_engines_follow_the_config(inputs: EngineInputs, tmp_path: Path) -> None:
    config, run = _config(tmp_path, "engine.engines=2", "engine.capacity=8")

    async def scenario() -> list[tuple[str, int, tuple[int, ...]]]:
        async with open_engines(config, run, inputs) as engine_set:
            assert engine_set.fleet is None
            engines = engine_set.engines
            assert all(isinstance(e, TorchEngine) for e in engines)
            return [(e.engine_id, e.capacity, e.config.stop_token_ids) for e in engines]  # type: ignore[attr-defined]

    assert asyncio.run(scenario()) == [("torch-0", 8, (3,)), ("torch-1", 8, (3,))]


@pytest.mark.parametrize(("fp32", "dtype"), [("true", torch.float32), ("false", torch.bfloat16)])
def test_inprocess_engines_compute_in_bf16_when_fp32_numerics_is_off(
    inputs: EngineInputs, tmp_path: Path, fp32: str, dtype: torch.dtype
) -> None:
    """The ablation's in-process engines compute (weights, activations) and store their
    recurrent state in bf16; the recipe's stay FP32; the trainer's policy is never cast."""
    config, run = _config(tmp_path, f"trainer.fp32_numerics={fp32}", "engine.engines=1")

    async def scenario() -> list[tuple[torch.dtype, torch.dtype]]:
        async with open_engines(config, run, inputs) as engine_set:
            engines = [e for e in engine_set.engines if isinstance(e, TorchEngine)]
            return [(e.compute_dtype, e.config.state_dtype) for e in engines]

    assert asyncio.run(scenario()) == [(dtype, dtype)]
    assert inputs.model.model.embed_tokens.weight.dtype == torch.float32


def test_http_engines_that_never_answer_fail_setup_in_bounded_time(
    inputs: EngineInputs, tmp_path: Path
) -> None:
    url = f"http://127.0.0.1:{_free_port()}"  # nothing listens there
    config, run = _config(
        tmp_path, "engine.kind=http", f'engine.urls=["{url}"]', "engine.startup_timeout_s=1.5"
    )

    async def scenario() -> None:
        async with open_engines(config, run, inputs):
            raise AssertionError("must not be reached")

    began = time.monotonic()
    with pytest.raises(EngineSetupError, match=rf"engine at {url} is not ready"):
        asyncio.run(scenario())
    assert time.monotonic() - began < 30


@pytest.mark.parametrize(("fp32", "dtype"), [("true", "float32"), ("false", "bfloat16")])
def test_launched_servers_honour_the_trainers_fp32_numerics(
    tmp_path: Path, fp32: str, dtype: str
) -> None:
    """``trainer.fp32_numerics = false`` asks every engine for a bf16 recurrent state: the
    in-process ones through ``EngineConfig.state_dtype``, launched servers through
    ``--mamba-ssm-cache-dtype`` (the served effect is tested in tests/serve/test_command.py)."""
    config, _ = _config(
        tmp_path, "engine.kind=http", "engine.launch=2", f"trainer.fp32_numerics={fp32}"
    )
    spec = server_spec(config, tmp_path)
    assert spec.state_dtype == dtype
    argv = serve_command(spec, "http-0")
    assert argv[argv.index("--mamba-ssm-cache-dtype") + 1] == dtype
