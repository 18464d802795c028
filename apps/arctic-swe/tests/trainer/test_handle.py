"""Tests for ``arctic_swe.trainer._handle``: the in-process :class:`TrainerHandle` steps off
the event loop, publishes the weights in the published format, honours (checks) the per-token
versions and the version a step makes, checkpoints and restores, audits layers, and hands the
engines its local model."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import attrs
import pytest
from safetensors.torch import load_file
from transformers import Qwen3_5ForCausalLM

from arctic_swe.config import TrainerSection
from arctic_swe.model import policy_config
from arctic_swe.trainer import (
    BatchError,
    InProcessTrainer,
    LoopState,
    Trainer,
    TrainerHandle,
    TrainSample,
    VersionConflictError,
    build_fp32_policy,
    latest_checkpoint,
)
from arctic_swe.weights import read_manifest, read_weights
from deck_evictor import Deck

from .conftest import VOCAB


def _sample(length: int, salt: int) -> TrainSample:
    ids = tuple((7 * i + 3 * salt + 1) % VOCAB for i in range(length))
    mask = tuple(i >= 2 for i in range(length))
    logprobs = tuple(-0.1 * (1 + (i + salt) % 7) if m else 0.0 for i, m in enumerate(mask))
    return TrainSample(ids, mask, logprobs, 0.5 if salt % 2 else -0.5)


BATCH = (_sample(12, 1), _sample(9, 2))


def _handle(policy: Qwen3_5ForCausalLM) -> InProcessTrainer:
    return InProcessTrainer(Trainer(policy, attrs.evolve(TrainerSection(), lr=1e-3)))


def test_the_in_process_adapter_steps_off_the_event_loop_and_writes_the_weights(
    policy: Qwen3_5ForCausalLM, tmp_path: Path
) -> None:
    trainer = _handle(policy)
    assert isinstance(trainer, TrainerHandle)

    async def run() -> tuple[float, float, list[float], Path]:
        ticks: list[float] = []

        async def tick() -> None:
            while True:
                ticks.append(time.monotonic())
                await asyncio.sleep(0.002)

        ticker = asyncio.create_task(tick())
        began = time.monotonic()
        await trainer.step(BATCH, versions=[(0,) * 12, (0,) * 9], version=1)
        ended = time.monotonic()
        ticker.cancel()
        return began, ended, ticks, await trainer.publish(1, tmp_path / "weights")

    began, ended, ticks, path = asyncio.run(run())
    assert trainer.steps == 1
    assert trainer.world_size == 1
    assert sum(began < t < ended for t in ticks) >= 3
    weights = load_file(str(path / "model.safetensors"))
    assert path.name == "policy-v1"
    assert "lm_head.weight" not in weights  # the tied alias, as Trainer.weights() leaves out
    assert weights.keys() == trainer.trainer.weights().keys()
    manifest = read_manifest(path)
    assert manifest is not None
    assert manifest.version == 1
    assert read_weights(path, version=1).keys() == weights.keys()


@pytest.mark.parametrize(
    ("versions", "version", "error", "message"),
    [
        (None, 2, VersionConflictError, "this step makes version 1, not 2"),
        ([(0,) * 12], None, BatchError, "1 version rows for 2 samples"),
        ([(0,) * 12, (0,) * 8], 1, BatchError, "sample 1: 8 token versions for 9 tokens"),
    ],
)
def test_versions_that_do_not_fit_the_batch_are_refused_before_any_training(
    policy: Qwen3_5ForCausalLM,
    versions: list[tuple[int, ...]] | None,
    version: int | None,
    error: type[BatchError],
    message: str,
) -> None:
    trainer = _handle(policy)
    before = {k: v.clone() for k, v in trainer.current_weights().items()}
    with pytest.raises(error, match=message) as raised:
        asyncio.run(trainer.step(BATCH, versions=versions, version=version))
    # a wrong version is the conflict the remote /step answers with 409, a ragged row a 400
    assert isinstance(raised.value, VersionConflictError) == (error is VersionConflictError)
    assert trainer.steps == 0
    after = trainer.current_weights()
    assert all(after[k].equal(v) for k, v in before.items())


def test_each_step_makes_the_next_version_and_a_restore_continues_from_the_checkpoint(
    policy: Qwen3_5ForCausalLM, tmp_path: Path
) -> None:
    trainer = _handle(policy)
    deck = Deck(["a", "b"], seed=0)
    root = tmp_path / "checkpoints"

    async def two_steps() -> Path:
        await trainer.step(BATCH, version=1)
        await trainer.step(BATCH)  # no version given: still counted
        return await trainer.checkpoint(root, LoopState(deck, 2, 2, {"x": 1}), keep=2)

    written = asyncio.run(two_steps())
    assert written == latest_checkpoint(root) == root / "step-2"
    again = _handle(build_fp32_policy(policy_config(VOCAB), seed=8))  # other weights
    restored = again.restore(written)
    assert (restored.version, restored.extras["x"], again.steps) == (2, 1, 2)
    assert all(again.current_weights()[k].equal(v) for k, v in trainer.current_weights().items())
    again.check_start(2)  # in process: the restored policy is the start, nothing to refuse
    with pytest.raises(VersionConflictError, match="this step makes version 3, not 2"):
        asyncio.run(again.step(BATCH, version=2))


def test_the_engines_get_the_local_model_and_the_audit_runs_on_it(
    policy: Qwen3_5ForCausalLM, tmp_path: Path
) -> None:
    trainer = _handle(policy)
    assert trainer.local_model() is policy
    audit = asyncio.run(trainer.layer_audit(BATCH[0], 8))
    assert audit is not None
    published = asyncio.run(trainer.publish(0, tmp_path))
    asyncio.run(trainer.publish(1, tmp_path))
    trainer.prune_published(tmp_path, tmp_path / "policy-v1")
    assert not published.exists()
    assert (tmp_path / "policy-v1").is_dir()
    asyncio.run(trainer.close())
