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
from arctic_swe.orchestrator._loop import Components, RLLoop
from arctic_swe.orchestrator._overfit import OverfitResult, run_overfit
from arctic_swe.orchestrator._provenance import InputsChangedError, record_inputs
from arctic_swe.orchestrator._setup import (
    EngineFactory,
    Inputs,
    SetupError,
    harness_config,
    open_components,
)

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
    "OverfitResult",
    "RLLoop",
    "SetupError",
    "build_samples",
    "harness_config",
    "open_components",
    "record_inputs",
    "run_group",
    "run_overfit",
    "tally",
    "training_rewards",
]
