"""``cluster up``: preflight, start every process, watch them, stop them all (Arctic-SWE §3.3).

Order: the engines and the trainer start together (each prints a ready line or answers
``/health``); once all are ready the launcher checks that every engine it started serves the
model it asked for (``/v1/models``: name and ``max_model_len``; vLLM's dtype), writes
``RUN/cluster/loop.toml`` — the loop's
configuration with the engines' URLs and the trainer's URL — and starts the orchestrator loop
(``arctic-swe cluster loop``) as the last child. The run ends when the loop exits: 0 is
success; any child exiting before that stops the rest.

Exit codes (those of every ``arctic-swe`` command): 0 done; 2 bad configuration or a failed
preflight (nothing started); 1 an engine, the trainer or the loop failed (the message names the
process and its log, :attr:`UpOutcome.failed` its role); 130 / 143 on SIGINT / SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

import attrs
from rich.console import Console

from arctic_swe.cluster._errors import ServedModelError
from arctic_swe.cluster._model_checks import VLLM_DTYPE, check_served, expected_max_model_len
from arctic_swe.cluster._plan import LOOP_CONFIG, TRAINER_CONFIG, ClusterPlan
from arctic_swe.cluster._progress import ClusterView
from arctic_swe.cluster._supervise import Child, ChildFailedError, Supervisor
from arctic_swe.cluster._topology import ClusterConfig, cluster_to_toml
from arctic_swe.config import RunConfig, TrainerSection, to_toml

#: Exit code of a run one of whose processes failed (a runtime failure, not a usage error).
FAILURE_EXIT = 1


@attrs.frozen
class UpOutcome:
    """How a cluster run ended: the exit code, the one line that says why and, when a process
    failed, its role (``engine``, ``trainer`` or ``loop``)."""

    code: int
    message: str
    failed: str = ""

    @classmethod
    def failure(cls, child: Child, message: str) -> UpOutcome:
        """The outcome of a run stopped because ``child`` failed."""
        return cls(FAILURE_EXIT, message, child.spec.role)


def remote_trainer_supported() -> bool:
    """Whether this build's loop can drive a torchrun trainer (``trainer.kind = "remote"``)."""
    return "kind" in attrs.fields_dict(TrainerSection)


def loop_config(config: ClusterConfig, engine_urls: list[str], trainer_url: str) -> RunConfig:
    """The loop's configuration once every server is up: HTTP engines at their URLs and,
    with trainer ranks, the remote trainer at rank 0's URL."""
    loop = config.loop
    engine = attrs.evolve(loop.engine, urls=tuple(engine_urls), launch=0)
    trainer = loop.trainer
    if trainer_url:
        remote: dict[str, Any] = {"kind": "remote", "url": trainer_url}  # the remote seam
        trainer = attrs.evolve(trainer, **remote)
    from arctic_swe.config import validate

    result = attrs.evolve(loop, engine=engine, trainer=trainer)
    validate(result)
    return result


def write_topology(config: ClusterConfig, run_dir: Path) -> Path:
    """``RUN/cluster/``: the resolved topology and the trainer's copy of the loop config."""
    folder = run_dir / "cluster"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "topology.toml").write_text(cluster_to_toml(config))
    (folder / TRAINER_CONFIG).write_text(to_toml(config.loop))
    return folder


async def run_cluster(
    config: ClusterConfig, plan: ClusterPlan, run_dir: Path, console: Console
) -> UpOutcome:
    """Start ``plan``'s processes, run until the loop ends, stop everything."""
    folder = write_topology(config, run_dir)
    view = ClusterView(config.loop.run.updates, run_dir / "metrics.jsonl", console)
    view.skip_existing()  # a resumed run shows only its new updates
    supervisor = Supervisor(run_dir)
    try:
        async with supervisor:
            with view:
                try:
                    return await _run(config, plan, supervisor, view, folder)
                except ChildFailedError as exc:
                    view.event(f"stopping the cluster: {exc}")
                    return UpOutcome.failure(exc.child, str(exc))
    finally:  # after every process stopped: the table records their exit codes
        _write_processes(folder, supervisor.children)


async def _run(
    config: ClusterConfig,
    plan: ClusterPlan,
    supervisor: Supervisor,
    view: ClusterView,
    folder: Path,
) -> UpOutcome:
    servers = [await supervisor.spawn(spec) for spec in plan.engines]
    trainer = await supervisor.spawn(plan.trainer) if plan.trainer is not None else None
    started = [*servers, *([trainer] if trainer else [])]
    total = len(plan.processes)
    for child in started:
        view.event(f"started {child.name} (pid {child.process.pid}): {child.spec.shell_line()}")
    timeout = config.loop.engine.startup_timeout_s
    urls = await asyncio.gather(*(_ready(supervisor, c, timeout, view) for c in started))
    view.processes(len(started), total)
    if plan.loop is None:  # a trainer-only node (node_rank > 0): run until its ranks end
        ended = await supervisor.first_exit(started)
        if ended.process.returncode == 0:
            return UpOutcome(0, "done: the trainer ranks finished")
        return _ended(ended)
    engine_urls = [*urls[: len(servers)]] or list(config.engines.urls)
    if servers:
        try:
            await _check_engines(config, engine_urls)
        except ServedModelError as exc:
            view.event(f"stopping the cluster: {exc}")
            return UpOutcome(FAILURE_EXIT, str(exc), "engine")
    trainer_url = urls[-1] if trainer is not None else ""
    loop = loop_config(config, engine_urls, trainer_url)
    (folder / LOOP_CONFIG).write_text(to_toml(loop))
    loop_child = await supervisor.spawn(plan.loop)
    view.event(f"started loop (pid {loop_child.process.pid}): {plan.loop.shell_line()}")
    view.processes(total, total)
    _write_processes(folder, supervisor.children)
    watch = asyncio.ensure_future(supervisor.first_exit(supervisor.children))
    try:
        while not watch.done():
            await asyncio.wait({watch}, timeout=1.0)
            view.poll()
    finally:
        watch.cancel()
    outcome = _ended(watch.result())
    if outcome.code == 0 and trainer is not None:
        await _shut_down(trainer, supervisor.grace)
    return outcome


async def _check_engines(config: ClusterConfig, urls: list[str]) -> None:
    """The started engines serve what the launcher asked for (Arctic-SWE §3.3)."""
    dtype = VLLM_DTYPE if config.engines.backend == "vllm" else ""
    wanted = expected_max_model_len(config, Path(config.model.path))
    await check_served(urls, max_model_len=wanted, dtype=dtype)


async def _shut_down(trainer: Child, grace: float) -> None:
    """Ask the trainer to leave cleanly (``POST /shutdown``: every rank exits, torchrun 0)
    before the supervisor's signals; a trainer that does not answer is signalled anyway."""
    import httpx

    with contextlib.suppress(httpx.HTTPError):
        async with httpx.AsyncClient(timeout=5.0) as client:
            await client.post(trainer.url.rstrip("/") + "/shutdown")
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(trainer.process.wait(), grace)


async def _ready(supervisor: Supervisor, child: Child, timeout: float, view: ClusterView) -> str:
    url = await supervisor.wait_ready(child, timeout)
    view.event(f"{child.name} ready at {url}")
    return url


def _ended(child: Child) -> UpOutcome:
    """The outcome once ``child`` exited first: success only for a loop that exited 0."""
    if child.spec.role == "loop" and child.process.returncode == 0:
        return UpOutcome(0, "done: the loop finished")
    return UpOutcome.failure(child, child.describe_exit())


def _write_processes(folder: Path, children: list[Child]) -> None:
    """``RUN/cluster/processes.json``: name, pid (= process group), URL, log, exit code."""
    rows: list[dict[str, Any]] = [
        {
            "name": c.name,
            "role": c.spec.role,
            "pid": c.process.pid,
            "url": c.url,
            "log": str(c.log),
            "returncode": c.process.returncode,
        }
        for c in children
    ]
    with contextlib.suppress(OSError):
        (folder / "processes.json").write_text(json.dumps(rows, indent=2) + "\n")
