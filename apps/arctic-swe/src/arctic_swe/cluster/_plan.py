"""The processes of a cluster and their exact command lines (what ``--dry-run`` prints).

One :class:`ProcessSpec` per child: engine servers (``arctic-swe serve`` or ``vllm serve``),
the trainer (``torchrun … -m arctic_swe.distributed``) and the orchestrator loop
(``arctic-swe cluster loop``). Each command is planned with the console-script name a user
would type in the activated environment and resolved at once to the role's environment
(``[engines] python`` for the engines, ``[trainer] python`` for the trainer, the launcher's own
for the loop; :func:`resolve_argv`): ``--dry-run`` prints exactly what ``up`` starts.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import attrs

from arctic_swe.cluster._envs import resolve_argv
from arctic_swe.cluster._topology import ClusterConfig
from arctic_swe.serve import VllmServeSpec, vllm_command

__all__ = ["ClusterPlan", "ProcessSpec", "plan_cluster", "resolve_argv"]

#: How a child says it is ready: a JSON ready line on stdout, an answering ``/health``, or
#: nothing (the loop: it runs to completion).
READY_LINE, READY_HEALTH, READY_NONE = "line", "health", "none"
#: Files the launcher writes under ``RUN/cluster/``.
TRAINER_CONFIG, LOOP_CONFIG = "trainer.toml", "loop.toml"


#: The model name every engine serves (``--served-model-name``; what ``HttpEngine`` sends).
SERVED_MODEL_NAME = "arctic-swe"


@attrs.frozen
class ProcessSpec:
    """One child process: ``name`` (its log is ``RUN/logs/<name>.log``), its ``role``
    (engine | trainer | loop), argv (resolved to the role's environment), extra environment,
    how it signals readiness, and the role's interpreter (``""``: the launcher's)."""

    name: str
    role: str
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    ready: str = READY_NONE
    url: str = ""  # known in advance (fixed port), else read from the ready line
    python: str = ""

    def shell_line(self) -> str:
        """The command as one copy-pasteable shell line, environment first."""
        env = [f"{key}={shlex.quote(value)}" for key, value in self.env]
        return " ".join([*env, shlex.join(self.argv)])


@attrs.frozen
class ClusterPlan:
    """Every process of one node of the cluster, in start order."""

    engines: tuple[ProcessSpec, ...]
    trainer: ProcessSpec | None
    loop: ProcessSpec | None

    @property
    def processes(self) -> tuple[ProcessSpec, ...]:
        rest = tuple(p for p in (self.trainer, self.loop) if p is not None)
        return self.engines + rest


def plan_cluster(
    config: ClusterConfig, run_dir: Path, model_dir: str, *, resume: bool = False
) -> ClusterPlan:
    """The processes ``cluster up`` starts on this node. A node with ``trainer.node_rank > 0``
    runs only its trainer ranks: engines and the loop live on node 0. ``resume``: the trainer
    restarts from its last DCP checkpoint and the loop from its last checkpoint in ``run_dir``."""
    trainer = _trainer(config, run_dir, model_dir, resume) if config.trainer.ranks else None
    if config.trainer.node_rank > 0:
        return ClusterPlan((), trainer, None)
    loop = _loop(config, run_dir, model_dir, resume)
    return ClusterPlan(_engines(config, model_dir), trainer, loop)


def _engines(config: ClusterConfig, model_dir: str) -> tuple[ProcessSpec, ...]:
    e = config.engines
    if e.urls:  # already running elsewhere: nothing to start
        return ()
    if e.backend == "vllm":
        return tuple(_vllm_engine(config, model_dir, i) for i in range(e.count))
    return tuple(_torch_engine(config, model_dir, i) for i in range(e.count))


def _torch_engine(config: ClusterConfig, model_dir: str, index: int) -> ProcessSpec:
    e = config.engines
    port = e.port + index if e.port else 0
    argv: tuple[str, ...] = (
        "arctic-swe", "serve", "--model", model_dir, "--host", e.host, "--port", str(port),
        "--capacity", str(e.capacity), "--threads", str(e.threads),
        "--engine-id", f"engine-{index}", "--served-model-name", SERVED_MODEL_NAME,
    )  # fmt: skip
    if e.max_model_len:
        argv += ("--max-model-len", str(e.max_model_len))
    argv = tuple(resolve_argv(argv, e.python))
    return ProcessSpec(f"engine-{index}", "engine", argv, (), READY_LINE, python=e.python)


def _vllm_engine(config: ClusterConfig, model_dir: str, index: int) -> ProcessSpec:
    e = config.engines
    spec = VllmServeSpec(
        model=model_dir,
        host=e.host,
        port=e.port + index,
        served_model_name=SERVED_MODEL_NAME,
        max_num_seqs=e.capacity,
        max_model_len=e.max_model_len or None,
        seed=config.loop.run.seed,
        gpu_memory_utilization=e.gpu_memory_utilization,
    )
    env = (("CUDA_VISIBLE_DEVICES", str(e.devices[index])), ("VLLM_SERVER_DEV_MODE", "1"))
    return ProcessSpec(
        name=f"engine-{index}",
        role="engine",
        argv=tuple(resolve_argv(vllm_command(spec), e.python)),
        env=env,
        ready=READY_HEALTH,
        url=f"http://{e.host}:{e.port + index}",
        python=e.python,
    )


def _trainer(config: ClusterConfig, run_dir: Path, model_dir: str, resume: bool) -> ProcessSpec:
    t = config.trainer
    if t.rdzv_endpoint:
        rendezvous: tuple[str, ...] = (
            "--nnodes", str(t.nnodes), "--node-rank", str(t.node_rank),
            "--rdzv-backend", "c10d", "--rdzv-endpoint", t.rdzv_endpoint, "--rdzv-id", t.rdzv_id,
        )  # fmt: skip
    else:
        rendezvous = ("--standalone",)
    argv = (
        "torchrun", *rendezvous, "--nproc-per-node", str(t.ranks),
        "-m", "arctic_swe.distributed",
        "--policy", model_dir, "--config", str(run_dir / "cluster" / TRAINER_CONFIG),
        "--run-dir", str(run_dir), "--host", t.host, "--port", str(t.port),
        "--threads", str(t.threads), *(("--resume",) if resume else ()),
    )  # fmt: skip
    # CPU ranks see no GPU (gloo, FP32); GPU ranks see exactly their devices (nccl).
    devices = ",".join(str(d) for d in t.devices)
    env = (("CUDA_VISIBLE_DEVICES", devices), ("OMP_NUM_THREADS", str(t.threads)))
    return ProcessSpec(
        "trainer", "trainer", tuple(resolve_argv(argv, t.python)), env, READY_LINE, python=t.python
    )


def _loop(config: ClusterConfig, run_dir: Path, model_dir: str, resume: bool) -> ProcessSpec:
    argv = (
        "arctic-swe", "cluster", "loop", "--run-dir", str(run_dir),
        "--config", str(run_dir / "cluster" / LOOP_CONFIG), "--deck", config.deck_dir,
        "--policy", model_dir, "--sandbox", config.sandbox.backend,
        *(("--resume",) if resume else ()),
    )  # fmt: skip
    # The loop always runs in the launcher's environment (it imports what the launcher has).
    argv = tuple(resolve_argv(argv))
    return ProcessSpec("loop", "loop", argv, (("CUDA_VISIBLE_DEVICES", ""),), READY_NONE)
