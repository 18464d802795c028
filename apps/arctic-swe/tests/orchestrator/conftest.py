"""Shared inputs of the real-loop tests: a three-task procedural deck (and two held-out tasks) and two random-init tiny
policies (different weights) with a tokenizer trained on the deck."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest
import torch

from arctic_swe.chat import save_tokenizer, train_tokenizer
from arctic_swe.deck import DeckConfig, write_deck
from arctic_swe.harness import TINY_HARNESS
from arctic_swe.model import policy_config, save_policy
from arctic_swe.orchestrator import Inputs
from arctic_swe.trainer import build_fp32_policy
from arctic_swe.warmstart._corpus import deck_corpus

# The smallest real loop the orchestrator tests run: a three-task pool, one group of two
# rollouts per update, 16-token turns. Modules add their own seed, update count and evaluation
# cadence on top (later overrides win).
TINY_LOOP = [
    "run.pool_eval_workers=2",
    "deck.pool_size=3",
    "deck.groups_per_update=1",
    "deck.rollouts_per_group=2",
    "deck.replay_size=0",
    "engine.capacity=4",
    "engine.max_resident=4",
    "engine.max_new_tokens=16",
    "harness.max_tokens=2048",
    "harness.sandboxes=2",
    "metrics.live=false",
    "metrics.plots=false",
    "trainer.micro_batch_rollouts=2",
]


#: ``pytestmark`` of a module that runs the real loop: namespace sandboxes, one torch thread.
REAL_LOOP_MARKS = [
    pytest.mark.skipif(
        os.geteuid() != 0 or shutil.which("unshare") is None,
        reason="the namespace sandbox needs root and unshare",
    ),
    pytest.mark.usefixtures("one_thread"),
]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Inputs:
    """``Inputs(deck, policy-0)``; ``policy-1`` sits beside ``policy-0`` (version pinning)."""
    root = tmp_path_factory.mktemp("pool")
    deck = write_deck(
        root / "deck", DeckConfig(seed=3, pool_size=3, heldout_size=2, warmstart_size=0)
    )
    tokenizer = train_tokenizer(deck_corpus(deck, TINY_HARNESS), 512)
    for seed in (0, 1):
        model = build_fp32_policy(
            policy_config(len(tokenizer), pad_token_id=tokenizer.pad_token_id), seed=seed
        )
        save_tokenizer(tokenizer, save_policy(model, root / f"policy-{seed}"))
    return Inputs(root / "deck", root / "policy-0")


@pytest.fixture
def one_thread() -> Iterator[None]:
    """The loop's default (``--threads 1``); `arctic-swe evaluate --threads 1` matches it."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
