"""The asynchronous RL loop: deck -> router -> engines -> harness -> sandboxes -> groups ->
advantages -> trainer, with generation overlapping training (run by ``arctic-swe overfit``)."""

from arctic_swe.orchestrator._batch import (
    FORMAT_GATE_ENDINGS,
    BatchTally,
    build_samples,
    tally,
    training_rewards,
)
from arctic_swe.orchestrator._groups import GroupJob, GroupOutcome, LeaseSampler, run_group
from arctic_swe.orchestrator._inputs import ensure_deck, ensure_policy, random_init_inputs
from arctic_swe.orchestrator._loop import Components, RLLoop
from arctic_swe.orchestrator._provenance import InputsChangedError, pool_source, record_inputs
from arctic_swe.orchestrator._setup import (
    EngineFactory,
    Inputs,
    SetupError,
    open_components,
)
from arctic_swe.orchestrator._training import TrainingResult, run_training

__all__ = [
    "FORMAT_GATE_ENDINGS",
    "BatchTally",
    "Components",
    "EngineFactory",
    "GroupJob",
    "GroupOutcome",
    "Inputs",
    "InputsChangedError",
    "LeaseSampler",
    "RLLoop",
    "SetupError",
    "TrainingResult",
    "build_samples",
    "ensure_deck",
    "ensure_policy",
    "open_components",
    "pool_source",
    "random_init_inputs",
    "record_inputs",
    "run_group",
    "run_training",
    "tally",
    "training_rewards",
]
