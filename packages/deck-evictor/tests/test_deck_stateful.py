"""Stateful tests: the Deck against the public deck contract (``deck_evictor.testing``).

The contract machine drives draws, training groups, replay probes, clock advances and
persistence round trips against a deliberately simple model; see
``deck_evictor/_kit_deck.py`` for every clause checked after each step. The second machine runs
the same contract on the final recipe's rules only (Arctic-SWE §5: retire only mastered tasks,
with replay feedback), so every example exercises the streak rule and reactivation: a task is
never both retired and active, the streak rule never retires a task short of its streak, only a
failed probe brings a task back, and a JSON round trip changes nothing.
"""

from __future__ import annotations

import json

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize

from deck_evictor import Deck
from deck_evictor.testing import deck_contract


def json_round_trip(deck: Deck) -> Deck:
    """Through the exact JSON the state file carries (``save`` adds the header and fsyncs)."""
    return Deck.from_state_dict(json.loads(json.dumps(deck.state_dict())))


DeckContract = deck_contract(Deck, reload=json_round_trip)
TestDeckContract = DeckContract.TestCase
TestDeckContract.settings = settings(TestDeckContract.settings, deadline=None)


class MasteredWithFeedback(DeckContract):  # type: ignore[misc, valid-type]
    """The contract, every example on ``mastered`` retirement with replay feedback."""

    @initialize(
        mastered_groups=st.integers(1, 3),
        min_group=st.integers(1, 2),
        reactivate_below=st.sampled_from([0.25, 0.5, 0.75, 1.0]),
        seed=st.integers(0, 2**32),
    )
    def build(
        self, mastered_groups: int, min_group: int, reactivate_below: float, seed: int
    ) -> None:
        super().build(
            easy="mastered",
            hard=None,
            min_group=min_group,
            mastered_groups=mastered_groups,
            reactivate_below=reactivate_below,
            reactivate_hard=None,
            seed=seed,
        )


TestMasteredWithFeedback = MasteredWithFeedback.TestCase
TestMasteredWithFeedback.settings = settings(
    TestMasteredWithFeedback.settings, deadline=None, max_examples=60
)
