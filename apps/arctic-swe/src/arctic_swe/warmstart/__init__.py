"""The warm start (the RFT stage before RL): a scripted expert that solves deck tasks through the
harness's tools and chat format, and supervised fine-tuning on its trajectories."""

from arctic_swe.warmstart._corpus import deck_corpus, task_corpus
from arctic_swe.warmstart._errors import WarmStartError
from arctic_swe.warmstart._expert import TEST_COMMAND, expert_sampler, expert_turns
from arctic_swe.warmstart._induction import (
    InductionConfig,
    InductionStep,
    copy_batch,
    copy_loss,
    pretrain_induction,
)
from arctic_swe.warmstart._live import warm_start_live
from arctic_swe.warmstart._pipeline import (
    EXPERT_FILE,
    WarmStartResult,
    collect_expert,
    warm_start,
)
from arctic_swe.warmstart._resume import StageCheckpoint, WarmStartStaging, staging_dir
from arctic_swe.warmstart._sft import (
    IGNORE,
    SFTConfig,
    SFTStep,
    assistant_loss,
    collate,
    train_sft,
)

__all__ = [
    "EXPERT_FILE",
    "IGNORE",
    "TEST_COMMAND",
    "InductionConfig",
    "InductionStep",
    "SFTConfig",
    "SFTStep",
    "StageCheckpoint",
    "WarmStartError",
    "WarmStartResult",
    "WarmStartStaging",
    "assistant_loss",
    "collate",
    "collect_expert",
    "copy_batch",
    "copy_loss",
    "deck_corpus",
    "expert_sampler",
    "expert_turns",
    "pretrain_induction",
    "staging_dir",
    "task_corpus",
    "train_sft",
    "warm_start",
    "warm_start_live",
]
