"""``arctic-swe serve`` as a command: bad input is one ``error:`` line and exit 2, the vLLM
backend's command line is printed by ``--dry-run`` without importing vLLM, the recurrent-state
dtype flag changes the served numerics, the listening socket disables Nagle, SIGTERM exits
cleanly and fast."""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import torch

from arctic_swe.engine import EngineConfig, TorchEngine
from arctic_swe.model import load_policy
from arctic_swe.serve._command import _listen_socket
from load_router import GenerateRequest

from .conftest import start_server

CLI = [sys.executable, "-m", "arctic_swe._cli", "serve"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120, check=False)


def test_a_missing_checkpoint_is_one_error_line(tmp_path: Path) -> None:
    done = _run("--model", str(tmp_path / "nowhere"), "--port", "0")
    assert done.returncode == 2
    assert done.stderr.startswith("arctic-swe: error: ")
    assert "not a checkpoint directory" in done.stderr
    assert done.stderr.count("\n") == 1


def test_vllm_dry_run_prints_the_command_without_vllm(tiny_checkpoint: Path) -> None:
    done = _run("--model", str(tiny_checkpoint), "--backend", "vllm", "--dry-run", "--port", "9001")
    assert done.returncode == 0, done.stderr
    line = done.stdout.strip()
    assert line.startswith("VLLM_SERVER_DEV_MODE=1 vllm serve ")
    assert f"serve {tiny_checkpoint} " in line
    assert "--mamba-ssm-cache-dtype float32" in line
    assert "--port 9001" in line
    ablation = _run(
        "--model", str(tiny_checkpoint), "--backend", "vllm", "--dry-run",
        "--mamba-ssm-cache-dtype", "bfloat16",
    )  # fmt: skip
    assert "--mamba-ssm-cache-dtype bfloat16" in ablation.stdout


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--mamba-ssm-cache-dtype", "float16"),
        ("--admission-window-ms", "-1"),
        ("--admission-window-ms", "nan"),
        ("--admission-window-ms", "soon"),
    ],
)
def test_bad_numeric_flags_are_usage_errors(tiny_checkpoint: Path, flag: str, value: str) -> None:
    done = _run("--model", str(tiny_checkpoint), "--port", "0", flag, value)
    assert done.returncode == 2
    assert flag in done.stderr


def test_the_listening_socket_is_tcp_with_nagle_off() -> None:
    """asyncio turns Nagle off only on sockets whose proto is TCP; accepted sockets inherit
    the listener's proto and TCP_NODELAY, so every response leaves without waiting for the
    client's delayed ACK (40 ms per kept-alive request otherwise)."""
    sock = _listen_socket("127.0.0.1", 0)
    try:
        sock.listen(1)  # uvicorn's create_server listens on it
        assert sock.proto == socket.IPPROTO_TCP
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        with socket.create_connection(sock.getsockname()) as client:
            accepted, _ = sock.accept()
            with accepted:
                assert accepted.proto == socket.IPPROTO_TCP
                assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
                client.sendall(b"x")
    finally:
        sock.close()


def _in_process_logprobs(checkpoint: Path, dtype: torch.dtype, prompt: list[int]) -> list[float]:
    engine = TorchEngine(load_policy(checkpoint), EngineConfig(capacity=2, state_dtype=dtype))
    request = GenerateRequest(rollout_index=0, prompt_ids=prompt, max_new_tokens=24)

    async def run() -> list[float]:
        turn = await engine.generate_detailed(request, seed=5, stop_token_ids=())
        await engine.close()
        return list(turn.logprobs)

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return asyncio.run(run())
    finally:
        torch.set_num_threads(before)


@pytest.mark.slow  # its own server process: ~30-60 s on the shared 2-core machine
def test_a_bf16_state_flag_serves_the_fp32_numerics_off_ablation(tiny_checkpoint: Path) -> None:
    """``--mamba-ssm-cache-dtype bfloat16`` (what a launched fleet gets under
    ``trainer.fp32_numerics = false``) serves exactly the in-process bf16-state engine's
    log-probs, visibly off the FP32-state engine's."""
    prompt = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3]
    server = start_server(tiny_checkpoint, "--capacity", "2", "--mamba-ssm-cache-dtype", "bfloat16")
    try:
        body = {"prompt": prompt, "max_tokens": 24, "seed": 5, "logprobs": 0, "ignore_eos": True}
        body |= {"return_token_ids": True}
        answer = httpx.post(server.url + "/v1/completions", json=body, timeout=60)
    finally:
        server.stop()
    assert answer.status_code == 200, answer.text
    served = answer.json()["choices"][0]["logprobs"]["token_logprobs"]
    bf16 = _in_process_logprobs(tiny_checkpoint, torch.bfloat16, prompt)
    fp32 = _in_process_logprobs(tiny_checkpoint, torch.float32, prompt)
    assert max(abs(a - b) for a, b in zip(served, bf16, strict=True)) < 1e-5
    assert max(abs(a - b) for a, b in zip(served, fp32, strict=True)) > 1e-4


def test_dry_run_without_vllm_backend_is_a_usage_error(tiny_checkpoint: Path) -> None:
    done = _run("--model", str(tiny_checkpoint), "--dry-run")
    assert done.returncode == 2
    assert "--dry-run applies to --backend vllm" in done.stderr


@pytest.mark.slow  # its own server process: ~60 s on the shared 2-core machine
def test_sigterm_stops_the_server_cleanly_within_seconds(tiny_checkpoint: Path) -> None:
    server = start_server(tiny_checkpoint, "--engine-id", "term-0")
    try:
        assert httpx.get(server.url + "/health", timeout=30).status_code == 200
        started = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        code = server.process.wait(timeout=30)
        assert time.monotonic() - started < 5.0
    finally:
        server.stop()
    assert code == 128 + signal.SIGTERM  # the CLI's interrupt policy: 143 after a clean stop
