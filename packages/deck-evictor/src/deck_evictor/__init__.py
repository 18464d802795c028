"""Task decks with easy/hard eviction, replay probes for forgetting, curriculum filters and crash-safe state.

Implements the fourth system fix of the Arctic-SWE paper (easy-hard eviction), the replay probes
that expose forgetting behind eviction-adjusted reward, the cumulative-solve-rate curriculum of
the RFT+DAPO recipe and the g/d acquisition-loss model with its mastery ceiling.
"""

from deck_evictor._config import CurriculumFilter, EvictionRules, ReplayPolicy, RetireReason
from deck_evictor._curriculum import split_by_solve_rate
from deck_evictor._deck import Deck
from deck_evictor._errors import (
    CorruptStateError,
    DeckError,
    DuplicateTaskError,
    EstimationError,
    ForeignStateError,
    InvalidConfigError,
    InvalidResultError,
    NotRetiredError,
    StateFileError,
    UnknownTaskError,
    UpdateOrderError,
)
from deck_evictor._pool import MakePool, TaskPool
from deck_evictor._rates import (
    RateEstimate,
    TransitionCounts,
    count_transitions,
    estimate_rates,
    log_likelihood,
    simulate_histories,
)
from deck_evictor._records import (
    AdjustedReward,
    CurriculumReport,
    Draw,
    ForgettingStat,
    ReplayOutcome,
    ReplaySummary,
    Retirement,
    TaskStats,
)
from deck_evictor._version import __version__

__all__ = [
    "AdjustedReward",
    "CorruptStateError",
    "CurriculumFilter",
    "CurriculumReport",
    "Deck",
    "DeckError",
    "Draw",
    "DuplicateTaskError",
    "EstimationError",
    "EvictionRules",
    "ForeignStateError",
    "ForgettingStat",
    "InvalidConfigError",
    "InvalidResultError",
    "MakePool",
    "NotRetiredError",
    "RateEstimate",
    "ReplayOutcome",
    "ReplayPolicy",
    "ReplaySummary",
    "RetireReason",
    "Retirement",
    "StateFileError",
    "TaskPool",
    "TaskStats",
    "TransitionCounts",
    "UnknownTaskError",
    "UpdateOrderError",
    "__version__",
    "count_transitions",
    "estimate_rates",
    "log_likelihood",
    "simulate_histories",
    "split_by_solve_rate",
]
