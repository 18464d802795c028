"""The property-testing kit: the deck contract as a hypothesis state machine, and a crash check.

Run the contract against your own task pool (anything implementing :class:`TaskPool`)::

    from deck_evictor.testing import deck_contract

    TestMyPool = deck_contract(MyPool, reload=round_trip_through_my_storage).TestCase

and check that your persistence survives SIGKILL at any instant with :func:`check_crash_safety`.

Needs hypothesis: ``pip install 'deck-evictor[testing]'``. ``import deck_evictor`` never imports it.
"""

from __future__ import annotations

try:
    import hypothesis  # noqa: F401  (fail here, with the install hint, not deep inside)
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without hypothesis
    raise ImportError(
        "deck_evictor.testing needs hypothesis: pip install 'deck-evictor[testing]'"
    ) from exc

from deck_evictor._kit_crash import (
    CrashReport,
    CrashSafetyError,
    PersistedPool,
    check_crash_safety,
)
from deck_evictor._kit_deck import (
    TASKS,
    DeckContractMachine,
    DeckContractViolationError,
    Reload,
    deck_contract,
)
from deck_evictor._pool import MakePool, TaskPool

__all__ = [
    "TASKS",
    "CrashReport",
    "CrashSafetyError",
    "DeckContractMachine",
    "DeckContractViolationError",
    "MakePool",
    "PersistedPool",
    "Reload",
    "TaskPool",
    "check_crash_safety",
    "deck_contract",
]
