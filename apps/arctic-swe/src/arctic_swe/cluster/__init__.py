"""``arctic-swe cluster``: one topology file, one launcher for every process (Arctic-SWE §3.3).

Engines (``arctic-swe serve`` or ``vllm serve``), the trainer (``torchrun``, FSDP2 ranks) and
the orchestrator loop run as supervised child processes: own process groups, logs under
``RUN/logs/``, health checks before the loop starts, and a clean stop of all of them on
completion, interrupt or the death of any one.
"""

from arctic_swe.cluster._loop_child import run_loop
from arctic_swe.cluster._plan import ClusterPlan, ProcessSpec, plan_cluster
from arctic_swe.cluster._preflight import PreflightError, preflight
from arctic_swe.cluster._summary import ClusterSummary, cluster_summary, cluster_summary_table
from arctic_swe.cluster._supervise import MARKER, marked_pids
from arctic_swe.cluster._topology import (
    ClusterConfig,
    ClusterConfigError,
    EnginesSpec,
    ModelSpec,
    SandboxSpec,
    TrainerSpec,
    cluster_from_mapping,
    cluster_to_toml,
    load_cluster,
    with_overrides,
)
from arctic_swe.cluster._up import FAILURE_EXIT, UpOutcome, run_cluster

__all__ = [
    "FAILURE_EXIT",
    "MARKER",
    "ClusterConfig",
    "ClusterConfigError",
    "ClusterPlan",
    "ClusterSummary",
    "EnginesSpec",
    "ModelSpec",
    "PreflightError",
    "ProcessSpec",
    "SandboxSpec",
    "TrainerSpec",
    "UpOutcome",
    "cluster_from_mapping",
    "cluster_summary",
    "cluster_summary_table",
    "cluster_to_toml",
    "load_cluster",
    "marked_pids",
    "plan_cluster",
    "preflight",
    "run_cluster",
    "run_loop",
    "with_overrides",
]
