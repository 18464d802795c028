"""One rank of the trainer process under ``torchrun``; rank 0 also drives the others.

Every rank loads the same policy, shards it (:class:`ShardedTrainer`) and, with ``--resume``,
restores the latest sharded checkpoint. Rank 0 serves HTTP (:mod:`._service`); each request that
needs the ranks becomes a *command* broadcast on a gloo control group (``broadcast_object_list``:
works under nccl too, where objects cannot travel on the GPU group), after which every rank runs
the same collective code: ``step`` (+ the consolidated weight export), ``checkpoint``, ``exit``.
The other ranks do nothing but wait for the next command. A rank that dies breaks the next
collective and torchrun tears the whole job down with a non-zero exit.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from arctic_swe._process import die_with_parent
from arctic_swe.config import RunConfig
from arctic_swe.distributed._checkpoint import (
    latest_sharded,
    load_sharded,
    save_sharded,
    trainer_checkpoints,
)
from arctic_swe.distributed._sharded import ShardedTrainer, ShardStats
from arctic_swe.trainer import TrainSample, load_fp32_policy
from arctic_swe.weights import prune, publish, published_dir, run_weights

#: Refresh files kept under ``RUN_DIR/weights`` (an engine may still be reading the previous).
_KEEP_WEIGHT_FILES = 2
#: The control group waits for the orchestrator's next request, which may take as long as a
#: whole batch of rollouts; rank death is caught by torchrun, not by this timeout.
_CONTROL_TIMEOUT = datetime.timedelta(days=7)


@dataclass(frozen=True)
class WorkerOptions:
    """What one trainer process needs (``arctic-swe train-worker`` options)."""

    policy: Path
    config: RunConfig
    run_dir: Path
    resume: bool = False
    threads: int | None = None
    collective_timeout_s: float = 600.0


@dataclass(frozen=True)
class StepResult:
    """What ``/step`` answers."""

    stats: ShardStats
    version: int
    weights_path: Path


@dataclass
class Worker:
    """This rank's trainer, its run directory and the control group."""

    options: WorkerOptions
    trainer: ShardedTrainer
    control: Any  # the gloo ProcessGroup commands travel on
    version: int = 0
    pids: tuple[int, ...] = ()  # every rank's process id, by rank
    last_checkpoint: Path | None = None
    history: list[float] = field(default_factory=list)  # seconds of each step
    #: rank 0: the newest version and its gathered full weights (the NCCL refresh sends them)
    latest_weights: tuple[int, dict[str, torch.Tensor]] | None = None

    @property
    def rank(self) -> int:
        return self.trainer.rank

    # ------------------------------------------------------------ rank 0 entry points
    def run_step(self, samples: tuple[TrainSample, ...]) -> StepResult:
        self._broadcast({"op": "step", "samples": samples})
        return self._step(samples)

    def run_checkpoint(self) -> Path:
        self._broadcast({"op": "checkpoint"})
        return self._checkpoint()

    def run_exit(self) -> None:
        self._broadcast({"op": "exit"})

    # ------------------------------------------------------------ other ranks
    def follow(self) -> None:
        """Execute rank 0's commands until it says ``exit``."""
        while True:
            command = self._receive()
            op = command["op"]
            if op == "exit":
                return
            if op == "step":
                self._step(command["samples"])
            elif op == "checkpoint":
                self._checkpoint()
            else:  # pragma: no cover - rank 0 only sends the three above
                raise RuntimeError(f"unknown trainer command {op!r}")

    # ------------------------------------------------------------ collective bodies
    def _step(self, samples: tuple[TrainSample, ...]) -> StepResult:
        stats = self.trainer.step(samples)
        self.version += 1
        self.history.append(stats.seconds)
        weights = self.trainer.full_weights()
        root = run_weights(self.options.run_dir)
        path = published_dir(root, self.version)
        if weights is not None:
            if self.options.config.engine.weight_transfer == "nccl":
                # kept for the broadcast (a whole model in CPU memory: only when it is sent)
                self.latest_weights = (self.version, weights)
            publish(weights, root, self.version)
            prune(root, keep=_KEEP_WEIGHT_FILES, current=path)
        return StepResult(stats, self.version, path)

    def _checkpoint(self) -> Path:
        root = trainer_checkpoints(self.options.run_dir)
        path = save_sharded(
            root, self.trainer, version=self.version, policy_dir=self.options.policy
        )
        self.last_checkpoint = path
        return path

    def _broadcast(self, command: dict[str, Any]) -> None:
        dist.broadcast_object_list([command], src=0, group=self.control)

    def _receive(self) -> dict[str, Any]:
        box: list[Any] = [None]
        dist.broadcast_object_list(box, src=0, group=self.control)
        command: dict[str, Any] = box[0]
        return command


def start_worker(options: WorkerOptions) -> Worker:
    """Join the torchrun job (``RANK``/``WORLD_SIZE``/``MASTER_*`` from the environment), build
    and shard the policy, resume if asked. Collective: every rank calls it."""
    # torchrun puts each worker in its own session: a SIGKILLed agent would otherwise leave
    # orphan ranks, so each rank asks for SIGTERM when the agent dies
    die_with_parent()
    cuda = torch.cuda.is_available()
    if options.threads is not None:
        torch.set_num_threads(options.threads)
    timeout = datetime.timedelta(seconds=options.collective_timeout_s)
    if cuda:
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    dist.init_process_group(backend="nccl" if cuda else "gloo", timeout=timeout)
    control: Any = dist.new_group(backend="gloo", timeout=_CONTROL_TIMEOUT)
    torch.manual_seed(options.config.run.seed)
    section = options.config.trainer
    policy = load_fp32_policy(str(options.policy), fp32_state=section.fp32_numerics)
    torch.nn.Module.to(policy, device)  # HF's .to() is untyped
    trainer = ShardedTrainer(policy, section)
    pids: list[Any] = [None] * trainer.world_size
    dist.all_gather_object(pids, os.getpid(), group=control)
    worker = Worker(options, trainer, control, pids=tuple(int(p) for p in pids))
    if options.resume:
        latest = latest_sharded(trainer_checkpoints(options.run_dir))
        if latest is not None:
            worker.version = load_sharded(latest, trainer)
            worker.last_checkpoint = latest
    return worker


def stop_worker() -> None:
    """Leave the process group (collective teardown; a no-op when it was never joined)."""
    if dist.is_initialized():
        dist.destroy_process_group()
