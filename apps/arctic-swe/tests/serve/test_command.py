"""``arctic-swe serve`` as a command: bad input is one ``error:`` line and exit 2, the vLLM
backend's command line is printed by ``--dry-run`` without importing vLLM, SIGTERM exits
cleanly and fast."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from .conftest import start_server

CLI = [sys.executable, "-m", "arctic_swe._cli", "serve"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120, check=False)


def test_a_missing_checkpoint_is_one_error_line(tmp_path: Path) -> None:
    done = _run("--model", str(tmp_path / "nowhere"), "--port", "0")
    assert done.returncode == 2
    assert done.stderr.startswith("error: ")
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
