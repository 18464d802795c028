"""The tokenizer's training corpus: exactly the text the policy will read and write.

Every task contributes its repository files, its rendered prompt (system prompt with the tool
specs, issue, generation prompt) and the expert's turns with the observation frames between
them, so frequent structure (the tool schema, call markup, ``return`` lines) becomes few tokens
and trajectories stay short on the tiny model.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from arctic_swe.chat import IM_END, observation_text
from arctic_swe.deck import DeckTask, StoredDeck
from arctic_swe.harness import HarnessConfig, prompt_text
from arctic_swe.warmstart._expert import expert_turns


def task_corpus(task: DeckTask, config: HarnessConfig) -> Iterator[str]:
    """Texts of one task: repository files, prompt, expert turns framed as in a trajectory."""
    repo = task.spec.repo.location
    for file in sorted(Path(repo).rglob("*")):
        if file.is_file():
            yield file.read_text()
    yield prompt_text(task.spec, config)
    for turn in expert_turns(task):
        yield turn + IM_END + observation_text("")


def deck_corpus(deck: StoredDeck | Iterable[DeckTask], config: HarnessConfig) -> Iterator[str]:
    """:func:`task_corpus` of every task of ``deck`` (all splits, generation order)."""
    for task in deck:
        yield from task_corpus(task, config)
