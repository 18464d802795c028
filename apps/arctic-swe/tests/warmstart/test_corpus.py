"""Tests for ``arctic_swe.warmstart._corpus``."""

from pathlib import Path

from arctic_swe.deck import StoredDeck
from arctic_swe.harness import TINY_HARNESS, prompt_text
from arctic_swe.warmstart import deck_corpus, expert_turns, task_corpus


def test_corpus_holds_files_prompt_and_expert_turns(small_deck: StoredDeck) -> None:
    task = small_deck.split("pool")[0]
    texts = list(task_corpus(task, TINY_HARNESS))
    assert Path(task.spec.repo.location, task.bug_path).read_text() in texts
    assert prompt_text(task.spec, TINY_HARNESS) in texts
    for turn in expert_turns(task):
        assert any(text.startswith(turn + "<|im_end|>") for text in texts)
    assert len(list(deck_corpus(small_deck, TINY_HARNESS))) == sum(
        len(list(task_corpus(t, TINY_HARNESS))) for t in small_deck
    )
