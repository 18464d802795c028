"""Each run-level ablation flag changes the component it names, not only the config: the deck's
eviction (deck-evictor), the router's placement (load-router) and the engines' recurrent-state
cache (the torch engine), each built from a ``RunConfig`` the way the loop builds it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import torch

from arctic_swe.config import RunConfig, apply_overrides
from arctic_swe.engine import TorchEngine
from arctic_swe.model import build_policy, policy_config
from arctic_swe.orchestrator._engines import EngineInputs, _inprocess_engines, torch_engine
from arctic_swe.orchestrator._setup import _evictor, routing_policy
from load_router import GenerateRequest, stable_hash


def _config(*overrides: str) -> RunConfig:
    return apply_overrides(RunConfig(), list(overrides))


def test_no_eviction_keeps_a_mastered_task_in_the_deck() -> None:
    recipe, ablated = (
        _evictor(_config(), ["a", "b"]),
        _evictor(_config("deck.eviction=false"), ["a", "b"]),
    )
    assert recipe.record("a", 8, 8) is None  # one all-correct group is not yet mastery
    assert recipe.record("a", 8, 8) is not None  # the second in a row: retired (mastered)
    assert not recipe.is_active("a")
    for _ in range(5):  # never retired, however often it is solved (or failed)
        assert ablated.record("a", 8, 8) is None
        assert ablated.record("b", 0, 8) is None
    assert ablated.is_active("a")
    assert ablated.retired == {}
    assert set(ablated.sample(2).task_ids) == {"a", "b"}  # still drawn for training


def test_session_hash_places_a_group_by_its_hash_not_by_load() -> None:
    placements = {}
    for routing in ("least_loaded", "session_hash"):
        index = routing_policy(_config("engine.engines=2", f"engine.routing={routing}")).new_index()
        for name in ("e0", "e1"):
            index.add(name, 16)
        target = f"e{stable_hash('task-3') % 2}"
        index.set_load(target, 12)  # the hash's engine is busy, the other idle
        placements[routing] = (index.choose("task-3", 4), target)
    chosen, target = placements["session_hash"]
    assert chosen == target  # by hash, whatever the load
    chosen, target = placements["least_loaded"]
    assert chosen != target  # by load: the idle engine


def _engine(fp32_numerics: bool) -> TorchEngine:
    model = build_policy(policy_config(96), 0)
    config = _config("engine.engines=1", f"trainer.fp32_numerics={str(fp32_numerics).lower()}")
    inputs = EngineInputs(model, Path("unused"), 95, 0, dict)
    (engine,) = _inprocess_engines(config, inputs, torch_engine)
    assert isinstance(engine, TorchEngine)
    return engine


def test_bf16_state_rounds_the_engines_recurrent_cache() -> None:
    """``trainer.fp32_numerics = false`` (``--no-fp32-numerics``, the bf16-state variant):
    every recurrent state the engine stores between decode steps is a bf16 value."""
    stored = {}
    for fp32 in (True, False):
        engine = _engine(fp32)
        request = GenerateRequest(
            rollout_index=0, prompt_ids=tuple(range(1, 30)), max_new_tokens=8, seed=1
        )
        asyncio.run(engine.generate(request))
        state = engine._core.pools.recurrent[0]
        assert state.abs().sum() > 0  # the finished sequence's state is still there to inspect
        stored[fp32] = state
    assert torch.equal(stored[False], stored[False].to(torch.bfloat16).float())
    assert not torch.equal(stored[True], stored[True].to(torch.bfloat16).float())
