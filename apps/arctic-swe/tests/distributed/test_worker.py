"""The trainer process for real: ``torchrun`` with 1 and 2 gloo ranks on 127.0.0.1, driven
over HTTP by :class:`RemoteTrainer` (nothing mocked, the tiny Qwen3.5 policy).

* a 2-rank FSDP2 step equals the 1-rank step on the same batch (parameters to 1e-6 relative,
  the gradient norm too: the normaliser is global), also when one rank has no sample;
* the HTTP seam delivers the batch bit for bit; bad input is a 4xx and the worker keeps serving;
* a DCP checkpoint written at 2 ranks resumes at 1 and at 2 ranks with an identical next step,
  and its consolidated export loads with ``load_policy``;
* a rank that dies takes the job down (non-zero exit) and the client gets a typed error.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import torch
from safetensors.torch import load_file

from arctic_swe.distributed import (
    RemoteTrainer,
    TrainerRequestError,
    TrainerUnavailableError,
    encode_batch,
)
from arctic_swe.distributed._wire import batch_digest
from arctic_swe.model import load_policy
from arctic_swe.trainer import StepStats, TrainSample

from .conftest import BATCH, LATER, SINGLE, TrainerProcess

RELATIVE = 1e-6


def _relative(ours: dict[str, torch.Tensor], reference: dict[str, torch.Tensor]) -> float:
    """``||a - b|| / ||b||`` over all parameters as one vector (same names required).

    One vector, not per tensor: Qwen3.5's norm gains are stored zero-centred, so a norm
    tensor's own size after one step is about the step itself and per-tensor ratios measure
    AdamW's treatment of near-zero gradients rather than the step."""
    assert ours.keys() == reference.keys()
    difference = sum(
        float((ours[k].double() - reference[k].double()).pow(2).sum()) for k in reference
    )
    size = sum(float(reference[k].double().pow(2).sum()) for k in reference)
    return (difference / size) ** 0.5


async def _step(
    url: str, batch: Sequence[TrainSample]
) -> tuple[StepStats, dict[str, torch.Tensor], str]:
    trainer = await RemoteTrainer(url, timeout_s=300).connect()
    try:
        versions = [tuple(range(-1, len(s.token_ids) - 1)) for s in batch]
        stats = await trainer.step(batch, versions=versions, version=trainer.version + 1)
        path = await trainer.publish(trainer.version, Path("unused"))
        assert trainer.last_stats["oldest_version"] == 0
        return stats, load_file(str(path / "model.safetensors")), trainer.last_digest
    finally:
        await trainer.close()


@dataclass
class Stepped:
    """Both trainers after BATCH then SINGLE, with what each step gave back."""

    one: TrainerProcess
    two: TrainerProcess
    results: dict[tuple[int, str], tuple[StepStats, dict[str, torch.Tensor], str]]


@pytest.fixture(scope="module")
def stepped(
    policy_dir: Path, config_file: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stepped]:
    root = tmp_path_factory.mktemp("trainers")
    one = TrainerProcess(1, policy_dir, root / "one", config_file)
    two = TrainerProcess(2, policy_dir, root / "two", config_file)
    try:
        one.wait_ready(), two.wait_ready()
        results = {}
        for name, batch in (("batch", BATCH), ("single", SINGLE)):
            for process in (one, two):
                results[(process.ranks, name)] = asyncio.run(_step(process.url, batch))
        yield Stepped(one, two, results)
    finally:
        one.kill(), two.kill()


@pytest.mark.parametrize("name", ["batch", "single"])
def test_two_ranks_take_the_one_rank_step(stepped: Stepped, name: str) -> None:
    one_stats, one_weights, _ = stepped.results[(1, name)]
    two_stats, two_weights, _ = stepped.results[(2, name)]
    assert _relative(two_weights, one_weights) <= RELATIVE
    # Adam's first steps hardly see a uniformly mis-scaled gradient; the norm does.
    assert two_stats.grad_norm == pytest.approx(one_stats.grad_norm, rel=1e-5)
    assert two_stats.loss == pytest.approx(one_stats.loss, rel=1e-5, abs=1e-9)
    assert two_stats.trainable_tokens == one_stats.trainable_tokens
    assert "lm_head.weight" not in two_weights  # tied alias left out, as save_pretrained does


def test_the_steps_moved_the_weights(stepped: Stepped, policy_dir: Path) -> None:
    start = load_file(str(policy_dir / "model.safetensors"))
    _, after, _ = stepped.results[(2, "batch")]
    assert _relative(after, {k: start[k] for k in after}) > 1e-4


def test_the_split_balances_tokens_and_leaves_a_rank_empty(stepped: Stepped) -> None:
    url = stepped.two.url
    health = httpx.get(f"{url}/health", timeout=30).json()
    assert health["world_size"] == 2
    assert len(set(health["pids"])) == 2
    for batch, loads in ((BATCH, [27, 26]), (SINGLE, [11, 0])):
        version = httpx.get(f"{url}/health", timeout=30).json()["version"] + 1
        reply = httpx.post(f"{url}/step", json=encode_batch(batch, version=version), timeout=300)
        assert reply.status_code == 200, reply.text
        assert reply.json()["stats"]["shard_tokens"] == loads


def test_the_http_seam_delivers_the_batch_bit_for_bit(stepped: Stepped) -> None:
    versions = [tuple(range(-1, len(s.token_ids) - 1)) for s in BATCH]
    expected = batch_digest(BATCH, versions)
    assert stepped.results[(1, "batch")][2] == expected
    assert stepped.results[(2, "batch")][2] == expected


def test_bad_input_is_a_4xx_and_the_worker_keeps_serving(stepped: Stepped) -> None:
    url = stepped.one.url
    before = httpx.get(f"{url}/health", timeout=30).json()["steps"]
    bad_ids = encode_batch(SINGLE)
    bad_ids["samples"][0]["token_ids"][0] = 10_000
    for body, status in ((b"not json", 400), (json.dumps(bad_ids).encode(), 400)):
        reply = httpx.post(f"{url}/step", content=body, timeout=30)
        assert reply.status_code == status, reply.text
        assert reply.json()["error"]["message"]
    stale = encode_batch(SINGLE, version=1)
    assert httpx.post(f"{url}/step", json=stale, timeout=30).status_code == 409

    async def refused() -> None:
        trainer = await RemoteTrainer(url).connect()
        try:
            with pytest.raises(TrainerRequestError, match="400"):
                await trainer.step([], version=None)  # an empty batch
        finally:
            await trainer.close()

    asyncio.run(refused())
    health = httpx.get(f"{url}/health", timeout=30).json()
    assert health["status"] == "ok"
    assert health["steps"] == before
    stats = asyncio.run(_step(url, SINGLE))[0]  # still trains
    assert stats.step == before + 1


def test_a_step_is_awaited_while_the_event_loop_keeps_running(stepped: Stepped) -> None:
    async def overlap() -> tuple[float, float, list[float]]:
        trainer = await RemoteTrainer(stepped.two.url).connect()
        ticks: list[float] = []

        async def generate() -> None:  # stands in for the engines' rollouts of batch k+1
            while True:
                ticks.append(asyncio.get_running_loop().time())
                await asyncio.sleep(0.005)

        ticker = asyncio.create_task(generate())
        try:
            began = asyncio.get_running_loop().time()
            await trainer.step(BATCH)
            ended = asyncio.get_running_loop().time()
        finally:
            ticker.cancel()
            await trainer.close()
        return began, ended, ticks

    began, ended, ticks = asyncio.run(overlap())
    during = [t for t in ticks if began < t < ended]
    assert len(during) >= 5, (ended - began, len(during))


# ---------------------------------------------------------------- checkpoints and failure
@pytest.fixture(scope="module")
def resumed(
    stepped: Stepped, policy_dir: Path, config_file: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[dict[str, torch.Tensor], Path, list[TrainerProcess]]]:
    """A checkpoint of the 2-rank trainer, its next step, and two trainers resumed from it."""
    trainer = stepped.two

    async def checkpoint() -> Path:
        remote = await RemoteTrainer(trainer.url).connect()
        try:
            return await remote.checkpoint_trainer()
        finally:
            await remote.close()

    path = asyncio.run(checkpoint())
    reference = asyncio.run(_step(trainer.url, LATER))[1]
    root = tmp_path_factory.mktemp("resumed")
    processes = []
    for ranks in (1, 2):
        run_dir = root / f"at-{ranks}"
        shutil.copytree(trainer.run_dir / "checkpoints", run_dir / "checkpoints", symlinks=True)
        processes.append(TrainerProcess(ranks, policy_dir, run_dir, config_file, resume=True))
    try:
        for process in processes:
            process.wait_ready()
        yield reference, path, processes
    finally:
        for process in processes:
            process.kill()


def test_a_two_rank_checkpoint_resumes_at_one_and_two_ranks(
    resumed: tuple[dict[str, torch.Tensor], Path, list[TrainerProcess]],
) -> None:
    reference, path, processes = resumed
    version = json.loads((path / "trainer.json").read_text())["version"]
    for process in processes:
        health = httpx.get(f"{process.url}/health", timeout=30).json()
        assert health["version"] == version
        assert health["world_size"] == process.ranks
        weights = asyncio.run(_step(process.url, LATER))[1]
        assert _relative(weights, reference) <= RELATIVE, process.ranks


def test_the_checkpoint_exports_a_loadable_policy(
    resumed: tuple[dict[str, torch.Tensor], Path, list[TrainerProcess]],
) -> None:
    _, path, _ = resumed
    model = load_policy(path / "model")
    exported = load_file(str(path / "model" / "model.safetensors"))
    state = model.state_dict()
    assert all(torch.equal(state[k], v) for k, v in exported.items())
    assert (path / "dcp" / ".metadata").is_file()


def test_a_dead_rank_stops_the_job_and_the_client_gets_a_typed_error(
    resumed: tuple[dict[str, torch.Tensor], Path, list[TrainerProcess]],
) -> None:
    process = resumed[2][1]  # the resumed 2-rank trainer
    pids = httpx.get(f"{process.url}/health", timeout=30).json()["pids"]
    os.kill(pids[1], signal.SIGKILL)
    assert process.wait_exit(timeout=120) != 0

    async def step() -> None:
        trainer = RemoteTrainer(process.url, timeout_s=10)
        try:
            await trainer.step(SINGLE)
        finally:
            await trainer.close()

    with pytest.raises(TrainerUnavailableError, match="unreachable"):
        asyncio.run(step())


def test_shutdown_ends_the_job_cleanly(stepped: Stepped) -> None:
    reply = httpx.post(f"{stepped.one.url}/shutdown", timeout=30)
    assert reply.json() == {"status": "stopping"}
    assert stepped.one.wait_exit(timeout=120) == 0
