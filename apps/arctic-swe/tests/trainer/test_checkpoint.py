"""Tests for ``arctic_swe.trainer._checkpoint``: atomic writes and exact resume."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest
import torch

from arctic_swe.config import TrainerSection
from arctic_swe.model import policy_config
from arctic_swe.trainer import (
    LATEST,
    ResumeError,
    Trainer,
    TrainSample,
    build_fp32_policy,
    latest_checkpoint,
    load_checkpoint,
    policy_dir,
    save_checkpoint,
)
from deck_evictor import Deck

VOCAB = 64


def _samples(shift: int) -> list[TrainSample]:
    out = []
    for k, adv in enumerate((0.5, -0.5)):
        ids = tuple((3 + shift + 5 * k + i) % VOCAB for i in range(8))
        mask = tuple(i >= 3 for i in range(8))
        out.append(TrainSample(ids, mask, tuple(-1.2 if m else 0.0 for m in mask), adv))
    return out


def _fresh() -> Trainer:
    return Trainer(build_fp32_policy(policy_config(VOCAB), seed=1), TrainerSection(lr=1e-3))


def test_resume_continues_exactly(tmp_path: Path) -> None:
    trainer, deck = _fresh(), Deck([f"t{i}" for i in range(6)], seed=3)
    trainer.step(_samples(0))
    deck.advance(1)
    deck.record(deck.sample(2).task_ids[0], 1, 4)
    path = save_checkpoint(tmp_path, trainer, deck, version=1, metrics_lines=1, extras={"clock": 1})
    noise_after_save = (torch.rand(3), random.random())
    trainer.step(_samples(1))
    continued = {k: v.clone() for k, v in trainer.model.state_dict().items()}

    resumed = _fresh()
    restored = load_checkpoint(latest_checkpoint(tmp_path) or path, resumed)
    assert (restored.step, restored.version, restored.metrics_lines) == (1, 1, 1)
    assert restored.extras == {"clock": 1}
    assert restored.deck.state_dict() == deck.state_dict()
    assert torch.equal(torch.rand(3), noise_after_save[0])
    assert random.random() == noise_after_save[1]
    resumed.step(_samples(1))
    for name, value in resumed.model.state_dict().items():
        assert torch.equal(value, continued[name]), name
    assert resumed.steps == 2


def test_latest_moves_only_after_a_complete_write_and_old_ones_are_pruned(tmp_path: Path) -> None:
    trainer, deck = _fresh(), Deck(["a", "b"], seed=0)
    assert latest_checkpoint(tmp_path) is None
    for _ in range(3):
        trainer.step(_samples(0))
        save_checkpoint(tmp_path, trainer, deck, version=trainer.steps, metrics_lines=0, keep=2)
    assert (tmp_path / LATEST).read_text().strip() == "step-3"
    assert sorted(p.name for p in tmp_path.glob("step-*")) == ["step-2", "step-3"]
    (tmp_path / ".step-4.crashed").mkdir()  # a staging directory left by a crash
    assert latest_checkpoint(tmp_path) == tmp_path / "step-3"


def test_incomplete_or_mismatched_checkpoints_are_refused(tmp_path: Path) -> None:
    trainer, deck = _fresh(), Deck(["a", "b"], seed=0)
    trainer.step(_samples(0))
    path = save_checkpoint(tmp_path, trainer, deck, version=1, metrics_lines=0)
    (path / "deck.state").unlink()
    with pytest.raises(ResumeError, match="incomplete"):
        latest_checkpoint(tmp_path)
    with pytest.raises(ResumeError, match="cannot resume"):
        load_checkpoint(path, _fresh())
    shutil.rmtree(path / "model")
    with pytest.raises(ResumeError):
        load_checkpoint(path, _fresh())


def test_a_checkpoint_with_its_tokenizer_is_a_policy_directory(tmp_path: Path) -> None:
    from arctic_swe.chat import load_tokenizer, train_tokenizer

    tokenizer = train_tokenizer(["def f(x):\n    return x + 1\n"] * 8, vocab_size=300)
    trainer, deck = _fresh(), Deck(["a", "b"], seed=0)
    trainer.step(_samples(0))
    run = tmp_path / "run"
    path = save_checkpoint(
        run / "checkpoints", trainer, deck, version=1, metrics_lines=0, tokenizer=tokenizer
    )
    # a run directory, a checkpoint directory and the model directory all name the same policy
    for given in (run, path, path / "model"):
        assert policy_dir(given) == path / "model"
    assert load_tokenizer(policy_dir(run)).get_vocab() == tokenizer.get_vocab()
    assert policy_dir(tmp_path / "elsewhere") == tmp_path / "elsewhere"  # left to the loader


def test_a_run_without_a_completed_checkpoint_is_not_a_policy(tmp_path: Path) -> None:
    (tmp_path / "run" / "checkpoints").mkdir(parents=True)
    with pytest.raises(ResumeError, match="no completed checkpoint"):
        policy_dir(tmp_path / "run")


def test_a_state_file_without_its_fields_is_a_resume_error(tmp_path: Path) -> None:
    import json

    trainer, deck = _fresh(), Deck(["a", "b"], seed=0)
    trainer.step(_samples(0))
    path = save_checkpoint(tmp_path, trainer, deck, version=1, metrics_lines=0)
    state = json.loads((path / "state.json").read_text())
    del state["version"]
    (path / "state.json").write_text(json.dumps(state))
    with pytest.raises(ResumeError, match="bad state"):
        load_checkpoint(path, _fresh_at_step(1))
    del state["step"]
    (path / "state.json").write_text(json.dumps(state))
    with pytest.raises(ResumeError, match="says step None"):
        load_checkpoint(path, _fresh_at_step(1))


def _fresh_at_step(steps: int) -> Trainer:
    trainer = _fresh()
    trainer.steps = steps  # what load_state_dict restores; the files' own check comes after
    return trainer
