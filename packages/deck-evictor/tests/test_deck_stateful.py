"""Stateful test: the Deck against the public deck contract (``deck_evictor.testing``).

The contract machine drives draws, training groups, replay probes, clock advances and
persistence round trips against a deliberately simple model; see
``deck_evictor/_kit_deck.py`` for every clause checked after each step.
"""

from __future__ import annotations

import json

from hypothesis import settings

from deck_evictor import Deck
from deck_evictor.testing import deck_contract


def json_round_trip(deck: Deck) -> Deck:
    """Through the exact JSON the state file carries (``save`` adds the header and fsyncs)."""
    return Deck.from_state_dict(json.loads(json.dumps(deck.state_dict())))


TestDeckContract = deck_contract(Deck, reload=json_round_trip).TestCase
TestDeckContract.settings = settings(TestDeckContract.settings, deadline=None)
