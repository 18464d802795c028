"""Shared pieces of the distributed-trainer tests: a tiny seeded policy and a batch whose
samples differ in length, trainable tokens and advantage (so a split gives the ranks unequal
token counts and a wrong normaliser shows)."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from transformers import Qwen3_5ForCausalLM

from arctic_swe.config import from_mapping, to_toml
from arctic_swe.model import policy_config, save_policy
from arctic_swe.trainer import TrainSample, build_fp32_policy

VOCAB = 64


def sample(length: int, first_trainable: int, advantage: float, salt: int) -> TrainSample:
    ids = tuple((7 * i + 3 * salt + 1) % VOCAB for i in range(length))
    mask = tuple(i >= first_trainable for i in range(length))
    logprobs = tuple(-0.1 * (1 + (i + salt) % 7) if m else 0.0 for i, m in enumerate(mask))
    return TrainSample(ids, mask, logprobs, advantage)


#: Five rollouts; split over 2 ranks by LPT as [0, 3] (27 tokens, 22 trainable) and
#: [1, 2, 4] (26 tokens, 9 trainable).
BATCH = (
    sample(20, 4, 0.75, 1),
    sample(12, 9, -0.5, 2),
    sample(9, 6, 0.25, 3),
    sample(7, 1, -0.75, 4),
    sample(5, 3, 0.5, 5),
)
#: One rollout: on 2 ranks, rank 1 has no sample at all.
SINGLE = (sample(11, 5, 0.5, 6),)
#: A third batch (the step after a checkpoint).
LATER = (sample(8, 2, -0.25, 7), sample(14, 3, 0.5, 8), sample(6, 2, -0.25, 9))


@pytest.fixture
def policy() -> Qwen3_5ForCausalLM:
    return build_fp32_policy(policy_config(VOCAB), seed=7)


# ---------------------------------------------------------------- real trainer processes
#: Importing torch + transformers in 3 fresh processes dominates the start on the shared box.
STARTUP_TIMEOUT_S = 300.0


class TrainerProcess:
    """``torchrun --standalone --nproc-per-node N -m arctic_swe.distributed`` in its own
    session; its ready line is read with a bounded wait and :meth:`kill` always cleans up."""

    def __init__(
        self, ranks: int, policy: Path, run_dir: Path, config: Path, *, resume: bool = False
    ) -> None:
        self.ranks, self.run_dir = ranks, run_dir
        run_dir.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable, "-m", "torch.distributed.run", "--standalone",
            f"--nproc-per-node={ranks}", "-m", "arctic_swe.distributed",
            "--policy", str(policy), "--config", str(config), "--run-dir", str(run_dir),
            "--port", "0", "--threads", "1",
        ]  # fmt: skip
        if resume:
            command.append("--resume")
        self.stderr = (run_dir / "trainer.stderr").open("w")
        env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=self.stderr, text=True, env=env,
            start_new_session=True,
        )  # fmt: skip
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self.url = ""

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def wait_ready(self, timeout: float = STARTUP_TIMEOUT_S) -> TrainerProcess:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=1.0)
            except queue.Empty:
                if self.process.poll() is not None:
                    break
                continue
            if line.startswith("{"):
                event = json.loads(line)
                if event.get("event") == "ready":
                    assert event["role"] == "trainer"
                    assert event["world_size"] == self.ranks
                    self.url = str(event["url"])
                    return self
        self.kill()
        log = (self.run_dir / "trainer.stderr").read_text()[-3000:]
        raise AssertionError(f"trainer ({self.ranks} ranks) never became ready:\n{log}")

    def wait_exit(self, timeout: float) -> int:
        return self.process.wait(timeout=timeout)

    def kill(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
        self.stderr.close()


def write_config(path: Path) -> Path:
    """The run config the test trainers read: two rollouts per micro-batch (so ranks run
    different numbers of micro-batches), a learning rate that moves the tiny model."""
    config = from_mapping({"run": {"seed": 0}, "trainer": {"lr": 1e-3, "micro_batch_rollouts": 2}})
    path.write_text(to_toml(config))
    return path


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("policy")
    save_policy(build_fp32_policy(policy_config(VOCAB), seed=7), root / "policy")
    return root / "policy"


@pytest.fixture(scope="module")
def config_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_config(tmp_path_factory.mktemp("config") / "run.toml")
