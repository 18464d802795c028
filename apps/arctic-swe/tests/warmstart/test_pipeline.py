"""Tests for ``arctic_swe.warmstart._pipeline``: a warm start end to end writes a loadable
checkpoint (policy + tokenizer + expert data)."""

import json
from pathlib import Path
from typing import Any, NoReturn

import pytest
from transformers import PreTrainedTokenizerFast

from arctic_swe.chat import encode, load_tokenizer
from arctic_swe.deck import StoredDeck
from arctic_swe.harness import Trajectory
from arctic_swe.model import PolicyPreset, load_policy
from arctic_swe.warmstart import (
    EXPERT_FILE,
    InductionConfig,
    SFTConfig,
    SFTStep,
    WarmStartError,
    staging_dir,
    warm_start,
)
from swe_sandbox import Limits, NamespaceBackend

SMALL = PolicyPreset(hidden_size=32, intermediate_size=64, head_dim=16, linear_key_head_dim=16,
                     linear_value_head_dim=16)  # fmt: skip


def test_warm_start_writes_a_loadable_checkpoint(
    small_deck: StoredDeck,
    deck_tokenizer: PreTrainedTokenizerFast,
    backend: NamespaceBackend,
    tmp_path: Path,
) -> None:
    steps: list[int] = []
    result = warm_start(
        small_deck.split("warmstart"),
        deck_tokenizer,
        tmp_path / "policy",
        backend,
        sft=SFTConfig(steps=3, batch_size=2),
        preset=SMALL,
        on_step=lambda s: steps.append(s.step),
        induction=InductionConfig(steps=2, batch_size=2, span=4),
    )
    assert steps == [0, 1, 2]
    assert [s.step for s in result.induction] == [0, 1]  # the copy stage ran first
    assert len(result.expert) == 2
    assert all(t.termination == "submitted" for t in result.expert)
    assert result.final_loss == result.steps[-1].loss
    model = load_policy(result.policy_dir)
    assert model.config.vocab_size == len(deck_tokenizer)
    tokenizer = load_tokenizer(result.policy_dir)
    assert encode(tokenizer, "return a + b") == encode(deck_tokenizer, "return a + b")
    lines = (result.policy_dir / EXPERT_FILE).read_text().splitlines()
    assert [Trajectory.from_json(line) for line in lines] == list(result.expert)
    assert (
        json.loads((result.policy_dir / "config.json").read_text())["model_type"] == "qwen3_5_text"
    )


def test_warm_start_needs_tasks(
    deck_tokenizer: PreTrainedTokenizerFast, backend: NamespaceBackend, tmp_path: Path
) -> None:
    with pytest.raises(WarmStartError, match="at least one task"):
        warm_start([], deck_tokenizer, tmp_path, backend)


class _NoSandbox:
    """A backend that fails the test if a sandbox is asked for."""

    name = "none"

    def start(self, sandbox_id: str, limits: Limits, *, image: str | None = None) -> NoReturn:
        raise AssertionError(f"sandbox {sandbox_id} started on resume")

    def reap_orphans(self) -> int:
        return 0


class _StopError(Exception):
    """Stands for the interrupt: raised from ``on_step`` in the middle of SFT."""


def test_an_interrupted_warm_start_resumes_at_the_stage_it_reached(
    small_deck: StoredDeck,
    deck_tokenizer: PreTrainedTokenizerFast,
    backend: NamespaceBackend,
    tmp_path: Path,
) -> None:
    tasks = small_deck.split("warmstart")
    settings: dict[str, Any] = {
        "sft": SFTConfig(steps=4, batch_size=1),
        "preset": SMALL,
        "induction": InductionConfig(steps=2, batch_size=2, span=4),
        "checkpoint_every": 2,
    }
    expert: list[Trajectory] = []
    losses: list[float] = []

    def stop_at_2(step: SFTStep) -> None:
        losses.append(step.loss)
        if step.step == 2:
            raise _StopError

    out = tmp_path / "policy"
    with pytest.raises(_StopError):
        warm_start(
            tasks, deck_tokenizer, out, backend, on_expert=expert.append, on_step=stop_at_2,
            **settings,
        )  # fmt: skip
    assert not out.exists()  # no half-trained checkpoint where a loader would find it
    assert (staging_dir(out) / "expert.jsonl").is_file()
    copy_steps: list[int] = []
    sft_steps: list[int] = []
    resumed = warm_start(
        tasks,
        deck_tokenizer,
        out,
        _NoSandbox(),  # the expert stage is done: not one sandbox may be asked for
        on_induction=lambda s: copy_steps.append(s.step),
        on_step=lambda s: sft_steps.append(s.step),
        **settings,
    )
    assert copy_steps == []  # the copy stage had finished
    assert sft_steps == [2, 3]  # saved after 2 steps; the third was interrupted
    by_task = {t.task_id: t for t in expert}
    assert list(resumed.expert) == [by_task[task.instance_id] for task in tasks]
    assert [s.loss for s in resumed.steps[:2]] == losses[:2]  # restored, not re-run
    assert resumed.steps[2].loss == pytest.approx(losses[2], rel=1e-5)  # the same step again
    assert not staging_dir(out).exists()
    assert load_policy(out).config.vocab_size == len(deck_tokenizer)
