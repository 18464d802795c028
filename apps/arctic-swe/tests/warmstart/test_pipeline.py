"""Tests for ``arctic_swe.warmstart._pipeline``: a warm start end to end writes a loadable
checkpoint (policy + tokenizer + expert data)."""

import json
from pathlib import Path

import pytest
from transformers import PreTrainedTokenizerFast

from arctic_swe.chat import encode, load_tokenizer
from arctic_swe.deck import Deck
from arctic_swe.harness import Trajectory
from arctic_swe.model import PolicyPreset, load_policy
from arctic_swe.warmstart import (
    EXPERT_FILE,
    InductionConfig,
    SFTConfig,
    WarmStartError,
    warm_start,
)
from swe_sandbox import NamespaceBackend

SMALL = PolicyPreset(hidden_size=32, intermediate_size=64, head_dim=16, linear_key_head_dim=16,
                     linear_value_head_dim=16)  # fmt: skip


def test_warm_start_writes_a_loadable_checkpoint(
    small_deck: Deck,
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
