"""The RL loop with a remote trainer: a real 2-rank ``torchrun`` trainer, a real ``arctic-swe
serve`` engine, real namespace sandboxes, the tiny policy (Arctic-SWE §3.3, fully asynchronous).

The loop only talks to the :class:`TrainerHandle`; this checks that it trains through the
trainer process, refreshes the engine from the file rank 0 wrote, checkpoints both halves, and
that the engine keeps generating the next batch *while* a step is in flight (its
``generated_tokens_total`` counter, polled from a thread, rises inside a step's time window).
Slow: three processes importing torch on a shared 2-core machine.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path

import httpx
import pytest

from arctic_swe.config import RunConfig, apply_overrides, prepare_run_dir
from arctic_swe.metrics import UpdateMetrics
from arctic_swe.model import load_policy
from arctic_swe.orchestrator import Inputs, random_init_inputs, run_training
from arctic_swe.trainer import policy_dir

from ..serve.conftest import start_server
from .conftest import TrainerProcess

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.geteuid() != 0 or shutil.which("unshare") is None,
        reason="the namespace sandbox needs root and unshare",
    ),
]

BASE = [
    "run.seed=0",
    "run.updates=3",
    "deck.pool_size=4",
    "deck.groups_per_update=2",
    "deck.rollouts_per_group=2",
    "deck.replay_size=0",
    "engine.capacity=8",
    "engine.max_resident=8",
    "engine.max_new_tokens=24",
    "engine.timeout_s=120",
    "engine.startup_timeout_s=300",
    "harness.max_tokens=2048",
    "harness.sandboxes=4",
    "metrics.live=false",
    "metrics.plots=false",
    "trainer.micro_batch_rollouts=2",
]


def _inputs(root: Path) -> Inputs:
    return random_init_inputs(root, 4)


class _CounterPoll(threading.Thread):
    """Samples an engine's ``generated_tokens_total`` every few milliseconds."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.stop = url, threading.Event()
        self.samples: list[tuple[float, float]] = []

    def run(self) -> None:
        with httpx.Client(timeout=5) as client:
            while not self.stop.is_set():
                try:
                    text = client.get(f"{self.url}/metrics").text
                except httpx.HTTPError:
                    time.sleep(0.01)
                    continue
                for line in text.splitlines():
                    if line.startswith("arctic_engine_generated_tokens_total "):
                        self.samples.append((time.monotonic(), float(line.split()[1])))
                time.sleep(0.005)

    def generated_between(self, start: float, end: float) -> float:
        inside = [value for at, value in self.samples if start <= at <= end]
        return inside[-1] - inside[0] if len(inside) >= 2 else 0.0


def test_the_loop_trains_through_a_two_rank_trainer_while_generating(tmp_path: Path) -> None:
    inputs = _inputs(tmp_path / "world")
    trainer_config = tmp_path / "trainer.toml"
    trainer_config.write_text("[trainer]\nmicro_batch_rollouts = 2\n")
    run_root = tmp_path / "run"
    trainer = TrainerProcess(2, inputs.policy_dir, run_root, trainer_config)
    engine = start_server(inputs.policy_dir, "--capacity", "8")
    poll = _CounterPoll(engine.url)
    try:
        trainer.wait_ready()
        config = apply_overrides(
            apply_overrides(RunConfig(), BASE),
            [
                "engine.kind=http",
                f'engine.urls=["{engine.url}"]',
                "trainer.kind=remote",
                f'trainer.url="{trainer.url}"',
                "trainer.timeout_s=300",
            ],
        )
        run = prepare_run_dir(run_root, config, resume=False)
        poll.start()
        result = run_training(config, run, inputs)
    finally:
        poll.stop.set()
        engine.stop()
        trainer.kill()
    records: tuple[UpdateMetrics, ...] = result.records
    assert [r.step for r in records] == [1, 2, 3]
    assert all(r.trainer_world_size == 2 for r in records)
    assert all(r.trainable_tokens >= 1 for r in records)
    # the engine generated tokens while some step was in flight (batch k+1 during step k)
    during = [
        poll.generated_between(r.step_started, r.step_started + r.train_seconds) for r in records
    ]
    assert max(during) > 0, (during, [r.train_seconds for r in records])
    # both halves of the checkpoint, and the run directory names a loadable policy
    state = json.loads((run.checkpoints / "step-3" / "state.json").read_text())
    assert state["trainer"] == "remote"
    assert (run.checkpoints / "trainer" / "step-3" / "dcp" / ".metadata").is_file()
    model = load_policy(policy_dir(run.root))
    assert sum(p.numel() for p in model.parameters()) > 0
    assert (run.root / "weights" / "policy-v3" / "model.safetensors").is_file()


def test_a_remote_run_resumes_with_a_resumed_trainer_and_a_fresh_engine(tmp_path: Path) -> None:
    """Two updates, everything stopped; then a trainer started with ``--resume`` on the run
    directory, a fresh engine (at the warm-start weights, caught up from the checkpoint's
    consolidated export) and ``resume=True`` finish update 3."""
    inputs = _inputs(tmp_path / "world")
    trainer_config = tmp_path / "trainer.toml"
    trainer_config.write_text("[trainer]\nmicro_batch_rollouts = 2\n")
    run_root = tmp_path / "run"

    def go(updates: int, *, resume: bool) -> tuple[UpdateMetrics, ...]:
        trainer = TrainerProcess(1, inputs.policy_dir, run_root, trainer_config, resume=resume)
        engine = start_server(inputs.policy_dir, "--capacity", "8")
        try:
            trainer.wait_ready()
            config = apply_overrides(
                apply_overrides(RunConfig(), BASE),
                [
                    f"run.updates={updates}",
                    "engine.kind=http",
                    f'engine.urls=["{engine.url}"]',
                    "trainer.kind=remote",
                    f'trainer.url="{trainer.url}"',
                ],
            )
            run = prepare_run_dir(run_root, config, resume=resume)
            return run_training(config, run, inputs, resume=resume).records
        finally:
            engine.stop()
            trainer.kill()

    first = go(2, resume=False)
    assert [r.step for r in first] == [1, 2]
    resumed = go(3, resume=True)
    assert [r.step for r in resumed] == [1, 2, 3]
    assert resumed[:2] == first  # the metrics of the first two updates are kept as written
    assert resumed[2].version == 3
    assert resumed[2].trainer_world_size == 1
