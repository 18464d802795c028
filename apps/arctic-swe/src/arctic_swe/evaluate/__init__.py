"""Policy-level evaluation (``arctic-swe evaluate``): sampled, gated success on a deck split
with a Wilson interval, for a warm start, a checkpoint or a run's latest checkpoint."""

from arctic_swe.evaluate._evaluate import (
    PolicyEvaluation,
    evaluate_policy,
    policy_engine,
    run_pool_size,
    sample_rollouts,
    tally_evaluation,
    wilson_interval,
)
from arctic_swe.evaluate._table import evaluation_table

__all__ = [
    "PolicyEvaluation",
    "evaluate_policy",
    "evaluation_table",
    "policy_engine",
    "run_pool_size",
    "sample_rollouts",
    "tally_evaluation",
    "wilson_interval",
]
