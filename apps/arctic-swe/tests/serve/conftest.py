"""Real ``arctic-swe serve`` processes on 127.0.0.1 for the service tests: a tiny random policy
written as a local checkpoint, a server started on port 0 (its ready line read with a bounded
wait), and a finaliser that always kills it."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from transformers import Qwen3_5ForCausalLM

from arctic_swe.model import build_policy, policy_config, save_policy

VOCAB = 96
#: Import of torch + transformers dominates a server's start; the shared CI machine is slow.
STARTUP_TIMEOUT_S = 240.0


def tiny_policy(seed: int = 0) -> Qwen3_5ForCausalLM:
    """The engine tests' tiny hybrid policy (3 Gated DeltaNet + 1 attention layer), its final
    norm gain raised so the next-token distribution is far from flat."""
    model = build_policy(policy_config(VOCAB), seed)
    with torch.no_grad():
        model.model.norm.weight.fill_(4.0)
    return model


def perturbed_state(
    model: torch.nn.Module, seed: int, scale: float = 0.05
) -> dict[str, torch.Tensor]:
    """``model``'s weights plus seeded noise (a stand-in for an optimizer step), tied aliases
    left out, as a weight file holds them."""
    generator = torch.Generator().manual_seed(seed)
    seen: set[int] = set()
    state: dict[str, torch.Tensor] = {}
    for name, tensor in model.state_dict(keep_vars=True).items():
        if id(tensor) in seen:
            continue
        seen.add(id(tensor))
        noise = torch.randn(tensor.shape, generator=generator)
        state[name] = (tensor + scale * tensor.abs().mean() * noise).detach()
    return state


@torch.no_grad()
def full_logprobs(model: torch.nn.Module, tokens: Sequence[int], start: int) -> torch.Tensor:
    """log p(tokens[t] | tokens[:t]) for t >= start from ONE full forward (float64
    log-softmax): the trainer's view of a trajectory."""
    logits = model(torch.tensor([list(tokens)])).logits[0].double()
    logprobs = torch.log_softmax(logits, dim=-1)
    targets = torch.tensor(list(tokens[start:]))
    return logprobs[start - 1 : len(tokens) - 1].gather(1, targets[:, None])[:, 0]


@dataclass
class ServerProcess:
    """One running ``arctic-swe serve`` process."""

    process: subprocess.Popen[str]
    url: str
    stderr_path: Path

    def kill(self) -> None:
        """SIGKILL (no clean shutdown) and reap."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after a bounded wait; always reaps."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.process.stdout is not None:
            self.process.stdout.close()

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")


def start_server(checkpoint: Path, *extra: str, threads: int = 1) -> ServerProcess:
    """Start ``arctic-swe serve --model checkpoint --port 0`` and wait for its ready line."""
    log = Path(tempfile.mkstemp(prefix="serve-", suffix=".log")[1])
    command = [sys.executable, "-m", "arctic_swe._cli", "serve", "--model", str(checkpoint)]
    command += ["--port", "0", "--threads", str(threads), *extra]
    with log.open("w") as err:
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=err, text=True, env=dict(os.environ)
        )
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    server = ServerProcess(process, "", log)
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            if process.poll() is not None:
                break
            continue
        ready = json.loads(line)
        if ready.get("event") == "ready":
            server.url = ready["url"]
            return server
    server.stop()
    raise AssertionError(f"server not ready in {STARTUP_TIMEOUT_S} s: {server.stderr()[-2000:]}")


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_policy(tiny_policy(), tmp_path_factory.mktemp("policy") / "tiny")


@pytest.fixture(scope="module")
def server(tiny_checkpoint: Path) -> Iterator[ServerProcess]:
    """One server per test module: capacity 4, a 64-token context."""
    process = start_server(tiny_checkpoint, "--capacity", "4", "--max-model-len", "64")
    try:
        yield process
    finally:
        process.stop()
