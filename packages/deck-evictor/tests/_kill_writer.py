"""Child process for the kill test: resume a deck from a state file and keep stepping + saving.

Usage: ``python _kill_writer.py STATE_PATH`` — loads the deck, then forever: run one
deterministic training step, print ``begin U``, save atomically, print ``saved U``. The parent
SIGKILLs it at random instants, aimed at the inside of a save. ``step`` is imported by the parent too, to build the
reference run the file must match.
"""

from __future__ import annotations

import sys
import zlib

from deck_evictor import Deck, EvictionRules, ReplayPolicy

TASKS = 5_000
GROUPS = 64


def fresh_deck() -> Deck:
    """The deck every kill-test run starts from (large enough that a save takes a while)."""
    return Deck(
        [f"repo__issue-{i}" for i in range(TASKS)],
        rules=EvictionRules(),
        replay=ReplayPolicy(every=3, size=8, min_age=1, reactivate_below=0.5),
        seed=2026,
    )


def outcome(task_id: str, update: int, salt: int) -> int:
    """A deterministic successes-out-of-8 for (task, update): no RNG shared with the deck."""
    return zlib.crc32(f"{task_id}/{update}/{salt}".encode()) % 9


def step(deck: Deck) -> None:
    """One update of the documented lifecycle: advance, sample, record, probe."""
    update = deck.advance()
    for task_id in deck.sample(GROUPS).task_ids:
        deck.record(task_id, outcome(task_id, update, 0), 8)
    for task_id in deck.replay_schedule(update):
        deck.record_replay(task_id, outcome(task_id, update, 1), 8)


def main(path: str) -> None:
    deck = Deck.load(path)
    while True:
        step(deck)
        print("begin", deck.update, flush=True)
        deck.save(path)
        print("saved", deck.update, flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
