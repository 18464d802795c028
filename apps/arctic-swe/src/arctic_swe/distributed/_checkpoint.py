"""Sharded checkpoints of the FSDP2 trainer (``torch.distributed.checkpoint``) and the
consolidated Hugging Face export engines and users load.

Layout under ``RUN_DIR/checkpoints/trainer/``::

    step-N/dcp/          DCP: every rank's shards of the model and AdamW state (+ .metadata)
    step-N/model/        consolidated HF checkpoint (config.json, model.safetensors, the
                         policy directory's tokenizer and chat template): ``load_policy`` reads it
    step-N/trainer.json  step, policy version and the world size that wrote it
    LATEST               one line naming the newest complete step-N

DCP stores each tensor with its global shape and the shards' offsets, so a checkpoint written at
N ranks loads at any other rank count (the reader re-slices). Writes go to a hidden staging
directory renamed into place, and ``LATEST`` is replaced atomically: a crash never leaves a
half-written checkpoint named as the latest.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.checkpoint.state_dict_loader import load as dcp_load
from torch.distributed.checkpoint.state_dict_saver import save as dcp_save

from arctic_swe._atomic import prune_steps, read_latest, replace_dir, write_latest
from arctic_swe.distributed._errors import TrainerCheckpointError
from arctic_swe.distributed._sharded import ShardedTrainer
from arctic_swe.weights import WEIGHTS_FILE, write_safetensors

_COPIED_SUFFIXES = (".json", ".jinja", ".txt", ".model")  # tokenizer, chat template, configs


def trainer_checkpoints(run_dir: Path) -> Path:
    """Where the trainer process keeps its checkpoints inside a run directory."""
    return run_dir / "checkpoints" / "trainer"


def save_sharded(
    root: Path, trainer: ShardedTrainer, *, version: int, policy_dir: Path, keep: int = 2
) -> Path:
    """Collective: write ``step-{trainer.steps}`` under ``root`` and prune all but the newest
    ``keep``; returns its path (on every rank)."""
    name = f"step-{trainer.steps}"
    staging = root / f".{name}.partial"
    if trainer.rank == 0:
        root.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
    dist.barrier()
    model_state, optim_state = get_state_dict(trainer.scorer, trainer.optimizer)
    dcp_save({"model": model_state, "optim": optim_state}, checkpoint_id=str(staging / "dcp"))
    weights = trainer.full_weights()  # collective; the full tensors land on rank 0 only
    if trainer.rank == 0:
        assert weights is not None
        write_hf_checkpoint(staging / "model", weights, trainer.config, policy_dir)
        meta = {"step": trainer.steps, "version": version, "world_size": trainer.world_size}
        (staging / "trainer.json").write_text(json.dumps(meta, indent=1, sort_keys=True))
        replace_dir(staging, root / name)
        write_latest(root, name)
        prune_steps(root, keep, current=name)
    dist.barrier()
    return root / name


def latest_sharded(root: Path) -> Path | None:
    """The complete checkpoint ``LATEST`` names, or ``None`` when there is none."""
    path = read_latest(root)
    if path is None:
        return None
    if not (path / "trainer.json").is_file() or not (path / "dcp" / ".metadata").is_file():
        raise TrainerCheckpointError(f"checkpoint {path} is incomplete")
    return path


def load_sharded(path: Path, trainer: ShardedTrainer) -> int:
    """Collective: restore model, AdamW state and step count from ``path`` (written at any
    world size); returns the policy version it holds."""
    try:
        meta = json.loads((path / "trainer.json").read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise TrainerCheckpointError(f"cannot read {path / 'trainer.json'}: {exc}") from exc
    model_state, optim_state = get_state_dict(trainer.scorer, trainer.optimizer)
    state: dict[str, Any] = {"model": model_state, "optim": optim_state}
    dcp_load(state, checkpoint_id=str(path / "dcp"))
    set_state_dict(
        trainer.scorer,
        trainer.optimizer,
        model_state_dict=state["model"],
        optim_state_dict=state["optim"],
    )
    trainer.steps = int(meta["step"])
    return int(meta["version"])


def write_hf_checkpoint(
    target: Path, weights: dict[str, torch.Tensor], config: Any, policy_dir: Path
) -> None:
    """A self-contained HF directory: ``weights`` as model.safetensors, the model config, and
    the tokenizer / chat-template / generation-config files of ``policy_dir``."""
    target.mkdir(parents=True, exist_ok=True)
    for source in sorted(policy_dir.iterdir()):
        if source.is_file() and source.suffix in _COPIED_SUFFIXES:
            shutil.copy2(source, target / source.name)
    config.save_pretrained(str(target))
    write_safetensors(weights, target / WEIGHTS_FILE)
