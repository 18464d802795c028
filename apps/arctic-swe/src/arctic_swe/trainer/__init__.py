"""The trainer: log-prob recompute with the engine's numerics, CISPO + IcePop, AdamW (β2 0.98),
and atomic, exactly-resumable checkpoints."""

from arctic_swe._atomic import LATEST
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
    policy_dir,
    save_checkpoint,
)
from arctic_swe.trainer._errors import BatchError, ResumeError, TrainerError, VersionConflictError
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
    TOKEN_MEANS,
    StepStats,
    Trainer,
    autocast_for,
    loss_config,
    micro_batch_loss,
    micro_batches,
    omega_stats,
    score_tokens,
)

__all__ = [
    "AUDIT_TOKENS",
    "LATEST",
    "OMEGA_QUANTILES",
    "TOKEN_MEANS",
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
    "VersionConflictError",
    "apply_fp32_numerics",
    "audit_layer_types",
    "audit_window",
    "autocast_for",
    "build_fp32_policy",
    "check_versions",
    "latest_checkpoint",
    "load_checkpoint",
    "load_fp32_policy",
    "loss_config",
    "micro_batch_loss",
    "micro_batches",
    "numerics_figures",
    "omega_stats",
    "pad_batch",
    "policy_dir",
    "read_run_state",
    "restore_run_state",
    "save_checkpoint",
    "score_tokens",
    "write_run_state",
]
