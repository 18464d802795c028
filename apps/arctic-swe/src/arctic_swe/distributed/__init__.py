"""The distributed trainer: FSDP2 ranks under torchrun behind rank 0's HTTP service, and the
orchestrator's client for it (Arctic-SWE §3.3: training on its own GPUs while engines serve)."""

from arctic_swe.distributed._checkpoint import (
    latest_sharded,
    load_sharded,
    save_sharded,
    trainer_checkpoints,
)
from arctic_swe.distributed._client import RemoteTrainer
from arctic_swe.distributed._errors import (
    DistributedTrainerError,
    TrainerCheckpointError,
    TrainerRequestError,
    TrainerUnavailableError,
)
from arctic_swe.distributed._loopstate import load_loop_state, save_loop_state
from arctic_swe.distributed._main import run_worker
from arctic_swe.distributed._sharded import PolicyScorer, ShardedTrainer, ShardStats
from arctic_swe.distributed._split import split_by_tokens
from arctic_swe.distributed._weight_sender import RemoteWeightSender
from arctic_swe.distributed._wire import WireBatch, decode_batch, encode_batch

__all__ = [
    "DistributedTrainerError",
    "PolicyScorer",
    "RemoteTrainer",
    "RemoteWeightSender",
    "ShardStats",
    "ShardedTrainer",
    "TrainerCheckpointError",
    "TrainerRequestError",
    "TrainerUnavailableError",
    "WireBatch",
    "decode_batch",
    "encode_batch",
    "latest_sharded",
    "load_loop_state",
    "load_sharded",
    "run_worker",
    "save_loop_state",
    "save_sharded",
    "split_by_tokens",
    "trainer_checkpoints",
]
