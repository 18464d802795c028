"""The loop's half of a remote-trainer checkpoint: exact round trip, link to the export, and
refusal of an in-process checkpoint (no torchrun needed: the trainer side is a directory)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch

from arctic_swe.config import TrainerSection
from arctic_swe.distributed import load_loop_state, save_loop_state
from arctic_swe.model import policy_config
from arctic_swe.trainer import (
    ResumeError,
    Trainer,
    build_fp32_policy,
    latest_checkpoint,
    policy_dir,
    save_checkpoint,
)
from deck_evictor import Deck


def test_the_loop_state_round_trips_and_links_the_trainers_export(tmp_path: Path) -> None:
    trainer_ckpt = tmp_path / "checkpoints" / "trainer" / "step-2"
    (trainer_ckpt / "model").mkdir(parents=True)
    (trainer_ckpt / "model" / "config.json").write_text("{}")
    deck = Deck([f"t{i}" for i in range(4)], seed=5)
    deck.advance(1)
    root = tmp_path / "checkpoints"
    path = save_loop_state(
        root, deck, step=2, version=2, metrics_lines=3, extras={"launched": 7},
        trainer_checkpoint=trainer_ckpt, keep=2,
    )  # fmt: skip
    noise_after_save = (torch.rand(2), random.random())
    assert latest_checkpoint(root) == path  # complete without trainer.pt or a model copy
    assert policy_dir(tmp_path) == path / "model"
    assert (path / "model" / "config.json").read_text() == "{}"  # the link resolves
    restored = load_loop_state(path)
    assert (restored.step, restored.version, restored.metrics_lines) == (2, 2, 3)
    assert restored.extras == {"launched": 7}
    assert restored.deck.state_dict() == deck.state_dict()
    assert torch.equal(torch.rand(2), noise_after_save[0])
    assert random.random() == noise_after_save[1]


def test_an_in_process_checkpoint_is_not_a_remote_runs_state(tmp_path: Path) -> None:
    trainer = Trainer(build_fp32_policy(policy_config(64), seed=1), TrainerSection(lr=1e-3))
    path = save_checkpoint(tmp_path, trainer, Deck(["a"], seed=0), version=0, metrics_lines=0)
    with pytest.raises(ResumeError, match="in-process trainer"):
        load_loop_state(path)
