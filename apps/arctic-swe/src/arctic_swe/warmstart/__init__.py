"""The warm start (RFT stage of seed 003): a scripted expert that solves deck tasks through the
harness's tools and chat format, and supervised fine-tuning on its trajectories."""

from arctic_swe.warmstart._errors import WarmStartError
from arctic_swe.warmstart._expert import TEST_COMMAND, expert_sampler, expert_turns
from arctic_swe.warmstart._sft import (
    IGNORE,
    SFTConfig,
    SFTStep,
    assistant_loss,
    collate,
    train_sft,
)

__all__ = [
    "IGNORE",
    "TEST_COMMAND",
    "SFTConfig",
    "SFTStep",
    "WarmStartError",
    "assistant_loss",
    "collate",
    "expert_sampler",
    "expert_turns",
    "train_sft",
]
