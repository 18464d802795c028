"""Checks that run before any process starts; each failure is one :class:`PreflightError` line.

* the checkpoint directory is a Qwen3.5 checkpoint: ``config.json``, safetensors weights,
  ``tokenizer.json`` and a chat template (and is set at all: the b200 preset leaves it empty
  on purpose), and ``engines.max_model_len`` fits its ``max_position_embeddings``;
* each role's interpreter (``[engines] python``, ``[trainer] python``) exists, and a probe it
  runs shows it can play the role: vLLM 0.33.x for vLLM engines, ``arctic_swe`` for
  ``arctic-swe serve`` engines, ``arctic_swe`` with a Qwen3.5 patch that applies to its
  ``transformers`` for the trainer (:mod:`._env_checks`; the trainer's probe, the slowest
  check, runs after the cheap ones);
* the run directory does not already hold a run (with ``--resume``: does hold one);
* every engine given by URL answers ``GET /health`` within ``engines.health_timeout_s`` and
  serves the model name the loop sends (:mod:`._model_checks`);
* trainer ranks fit the machine: CPU ranks (no ``trainer.devices``) at most the CPUs this
  process may run on (``os.sched_getaffinity``; the rule is one rank per core); GPU ranks
  and vLLM engines only on CUDA devices that exist;
* vLLM engines have a GPU each;
* no two processes want the same fixed port, and every fixed local port is free;
* the sandbox backend is usable (root + util-linux for namespaces, a Docker engine for docker).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
from pathlib import Path

from arctic_swe._hf_layout import checkpoint_problem
from arctic_swe.cluster._env_checks import check_environments, check_interpreters
from arctic_swe.cluster._envs import ENGINE, TRAINER, VLLM
from arctic_swe.cluster._errors import PreflightError
from arctic_swe.cluster._model_checks import check_context_length, check_served
from arctic_swe.cluster._topology import ClusterConfig

__all__ = ["PreflightError", "preflight"]


def check_model(path: str) -> Path:
    """The checkpoint directory, or :class:`PreflightError` naming every missing piece
    (config.json of a Qwen3.5 model, safetensors, tokenizer.json, the chat template)."""
    if not path:
        raise PreflightError(
            "model.path is not set: point it at a local Hugging Face checkpoint directory "
            "(config.json, *.safetensors, tokenizer.json) or pass --model DIR"
        )
    problem = checkpoint_problem(path)
    if problem is not None:
        raise PreflightError(f"model.path: {problem}")
    return Path(path)


def check_run_dir(run_dir: Path, *, resume: bool = False) -> None:
    """A fresh run needs a directory without a run; ``resume`` needs one with a run."""
    holds_run = (run_dir / "config.toml").exists()
    if resume and not holds_run:
        raise PreflightError(f"nothing to resume: {run_dir / 'config.toml'} does not exist")
    if holds_run and not resume:
        raise PreflightError(
            f"{run_dir} already holds a run; pass --resume to continue it or pick a new --run-dir"
        )


def check_cpus(config: ClusterConfig) -> None:
    """CPU trainer ranks: at most one per usable core."""
    t = config.trainer
    if t.ranks and not t.devices:
        usable = len(os.sched_getaffinity(0))
        if t.ranks > usable:
            raise PreflightError(
                f"trainer.ranks = {t.ranks} CPU ranks but this machine has {usable} usable "
                "CPUs (one rank per core); lower trainer.ranks or give trainer.devices"
            )


def check_machine(config: ClusterConfig) -> None:
    """Ranks vs CPUs/GPUs and ports (the roles' environments: :mod:`._env_checks`)."""
    t, e = config.trainer, config.engines
    check_cpus(config)
    wanted = [*t.devices, *(e.devices if not e.urls else ())]
    if wanted:
        gpus = cuda_device_count()
        if max(wanted) >= gpus:
            raise PreflightError(
                f"devices {sorted(set(wanted))} are configured but this machine has {gpus} "
                "CUDA devices"
            )
    check_ports(config)


def cuda_device_count() -> int:
    """CUDA devices the driver reports (``nvidia-smi -L``; 0 without a driver). torch is not
    imported: the launcher stays light."""
    if shutil.which("nvidia-smi") is None:
        return 0
    try:
        listing = subprocess.run(
            ["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(line.startswith("GPU ") for line in listing.stdout.splitlines())


def fixed_ports(config: ClusterConfig) -> list[tuple[str, str, int]]:
    """``(process, host, port)`` of every port the configuration pins on this node."""
    e, t = config.engines, config.trainer
    ports: list[tuple[str, str, int]] = []
    if not e.urls and e.port and t.node_rank == 0:
        ports += [(f"engine-{i}", e.host, e.port + i) for i in range(e.count)]
    if t.ranks and t.port and t.node_rank == 0:
        ports.append(("trainer", t.host, t.port))
    if t.ranks and t.rdzv_endpoint and t.node_rank == 0:
        host, _, port = t.rdzv_endpoint.rpartition(":")
        if port.isdigit() and _is_local(host):
            ports.append(("trainer rendezvous", host, int(port)))
    return ports


def check_ports(config: ClusterConfig) -> None:
    seen: dict[int, str] = {}
    for name, host, port in fixed_ports(config):
        if port in seen:
            raise PreflightError(f"port {port} is given to both {seen[port]} and {name}")
        seen[port] = name
        if not _bindable(host, port):
            raise PreflightError(f"port {port} ({name}) on {host} is already in use")


def _is_local(host: str) -> bool:
    return host in ("", "localhost", "127.0.0.1", "::1", "0.0.0.0", socket.gethostname())


def _bindable(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host if host not in ("localhost",) else "127.0.0.1", port))
        except OSError:
            return False
    return True


async def check_urls(urls: tuple[str, ...], timeout: float) -> None:
    """Every URL answers ``GET /health`` with 200 within ``timeout`` seconds (all at once)."""
    import httpx

    async def probe(client: httpx.AsyncClient, url: str) -> str | None:
        try:
            response = await client.get(url.rstrip("/") + "/health")
        except httpx.HTTPError as exc:
            return f"{type(exc).__name__}"
        return None if response.status_code == 200 else f"HTTP {response.status_code}"

    async with httpx.AsyncClient(timeout=timeout) as client:
        failures = await asyncio.gather(*(probe(client, url) for url in urls))
    for url, failure in zip(urls, failures, strict=True):
        if failure is not None:
            raise PreflightError(
                f"engine URL {url} does not answer /health within {timeout:g} s ({failure})"
            )


def check_sandbox(backend: str) -> None:
    """The backend can start sandboxes here (cheap checks; no image is built)."""
    from swe_sandbox import BackendUnavailableError, UnknownBackendError, create_backend

    try:
        create_backend(backend).check()  # docker: connects and pings; namespace: root, tools
    except (BackendUnavailableError, UnknownBackendError) as exc:
        raise PreflightError(f"sandbox.backend = {backend}: {exc}") from exc


async def preflight(config: ClusterConfig, run_dir: Path | None, *, resume: bool = False) -> Path:
    """Every check, cheapest first; returns the checkpoint directory. Nothing is started.

    The engines' environment is probed before the GPU count is read, so that a launcher
    without vLLM says which environment to create rather than that a GPU is missing."""
    from arctic_swe.cluster._up import remote_trainer_supported

    node0 = config.trainer.node_rank == 0
    model = check_model(config.model.path)
    if run_dir is not None and node0:
        check_run_dir(run_dir, resume=resume)
    check_interpreters(config)
    check_context_length(config, model)
    check_cpus(config)
    await check_environments(config, (VLLM, ENGINE))
    check_machine(config)
    if config.trainer.ranks and not remote_trainer_supported():
        raise PreflightError(
            "trainer.ranks > 0 needs the distributed trainer (trainer.kind = remote), which "
            "this build does not have; set trainer.ranks = 0 for the loop's own trainer"
        )
    await check_environments(config, (TRAINER,))
    if config.engines.urls and node0:
        e = config.engines
        await check_urls(e.urls, e.health_timeout_s)
        await check_served(
            list(e.urls), max_model_len=e.max_model_len or None, timeout=e.health_timeout_s
        )
    if node0:
        check_sandbox(config.sandbox.backend)
    return model
