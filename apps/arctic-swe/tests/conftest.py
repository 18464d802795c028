"""Shared fixtures (harness, warm start): a small real deck, its tokenizer, the namespace sandbox."""

import os
import shutil
from pathlib import Path

import pytest
from transformers import PreTrainedTokenizerFast

from arctic_swe.chat import train_tokenizer
from arctic_swe.deck import DeckConfig, StoredDeck, write_deck
from arctic_swe.harness import TINY_HARNESS
from arctic_swe.warmstart import deck_corpus
from swe_sandbox import NamespaceBackend


@pytest.fixture(scope="session")
def small_deck(tmp_path_factory: pytest.TempPathFactory) -> StoredDeck:
    root: Path = tmp_path_factory.mktemp("deck") / "deck"
    return write_deck(root, DeckConfig(seed=5, pool_size=3, heldout_size=0, warmstart_size=2))


@pytest.fixture(scope="session")
def deck_tokenizer(small_deck: StoredDeck) -> PreTrainedTokenizerFast:
    return train_tokenizer(list(deck_corpus(small_deck, TINY_HARNESS)) * 4, vocab_size=1024)


@pytest.fixture(scope="session")
def backend() -> NamespaceBackend:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("the namespace sandbox needs root and unshare")
    return NamespaceBackend()
