"""The Deck as a crash-safety target: a module of ``build``/``step``/``save``/``load``/``state``
(loaded by file path in each writer process, so it imports neither the tests nor hypothesis).

A deck large enough that a save takes a while (the kills aim inside saves), stepped through the
documented lifecycle with deterministic outcomes: advance, sample, record, probe.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

from deck_evictor import Deck, EvictionRules, ReplayPolicy

TASKS = 5_000
GROUPS = 64


def build() -> Deck:
    """The deck every run starts from."""
    return Deck(
        [f"repo__issue-{i}" for i in range(TASKS)],
        rules=EvictionRules(),
        replay=ReplayPolicy(every=3, size=8, min_age=1, reactivate_below=0.5),
        seed=2026,
    )


def outcome(task_id: str, update: int, salt: int) -> int:
    """A deterministic successes-out-of-8 for (task, update): no RNG shared with the deck."""
    return zlib.crc32(f"{task_id}/{update}/{salt}".encode()) % 9


def step(deck: Deck, index: int) -> None:
    """Step ``index`` of the run: update ``index + 1`` of the documented lifecycle."""
    update = deck.advance(index + 1)
    for task_id in deck.sample(GROUPS).task_ids:
        deck.record(task_id, outcome(task_id, update, 0), 8)
    for task_id in deck.replay_schedule(update):
        deck.record_replay(task_id, outcome(task_id, update, 1), 8)


def save(deck: Deck, path: Path) -> None:
    deck.save(path)


def load(path: Path) -> Deck:
    return Deck.load(path)


def state(deck: Deck) -> dict[str, Any]:
    return deck.state_dict()
