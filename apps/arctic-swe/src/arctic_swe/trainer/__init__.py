"""The trainer: log-prob recompute with the engine's numerics, CISPO + IcePop, AdamW (β2 0.98),
and atomic, exactly-resumable checkpoints."""

from arctic_swe.trainer._audit import (
    AUDIT_TOKENS,
    LayerTypeKL,
    audit_layer_types,
    audit_window,
    numerics_figures,
)
from arctic_swe.trainer._checkpoint import (
    latest_checkpoint,
    load_checkpoint,
    load_model_from,
    policy_dir,
    save_checkpoint,
)
from arctic_swe.trainer._errors import BatchError, ResumeError, TrainerError
from arctic_swe.trainer._handle import (
    InProcessTrainer,
    LoopState,
    Tokenizer,
    TrainerHandle,
    check_versions,
)
from arctic_swe.trainer._numerics import apply_fp32_numerics, build_fp32_policy, load_fp32_policy
from arctic_swe.trainer._runstate import (
    Restored,
    RunState,
    read_run_state,
    restore_run_state,
    write_run_state,
)
from arctic_swe.trainer._samples import PaddedBatch, TrainSample, pad_batch
from arctic_swe.trainer._trainer import (
    OMEGA_QUANTILES,
    StepStats,
    Trainer,
    loss_config,
    omega_stats,
)
from arctic_swe.weights import LATEST

__all__ = [
    "AUDIT_TOKENS",
    "LATEST",
    "OMEGA_QUANTILES",
    "BatchError",
    "InProcessTrainer",
    "LayerTypeKL",
    "LoopState",
    "PaddedBatch",
    "Restored",
    "ResumeError",
    "RunState",
    "StepStats",
    "Tokenizer",
    "TrainSample",
    "Trainer",
    "TrainerError",
    "TrainerHandle",
    "apply_fp32_numerics",
    "audit_layer_types",
    "audit_window",
    "build_fp32_policy",
    "check_versions",
    "latest_checkpoint",
    "load_checkpoint",
    "load_fp32_policy",
    "load_model_from",
    "loss_config",
    "numerics_figures",
    "omega_stats",
    "pad_batch",
    "policy_dir",
    "read_run_state",
    "restore_run_state",
    "save_checkpoint",
    "write_run_state",
]
