"""Policy-level evaluation (``arctic-swe evaluate``): sampled, gated success on a deck split
with a Wilson interval, for a warm start, a checkpoint or a run's latest checkpoint."""

from arctic_swe._wilson import wilson_interval
from arctic_swe.evaluate._evaluate import (
    PolicyEvaluation,
    evaluate_policy,
    evaluate_policy_async,
    policy_engine,
    recipe_harness,
    rollouts_digest,
    run_harness,
    run_pool_size,
    sample_rollouts,
    tally_evaluation,
)
from arctic_swe.evaluate._seeds import (
    CHECK_STREAM,
    HELDOUT_STREAM,
    POOL_STREAM,
    STREAMS,
    SeededSampler,
    rollout_seed,
    rollout_seeds,
    stream_seed,
)
from arctic_swe.evaluate._table import evaluation_table

__all__ = [
    "CHECK_STREAM",
    "HELDOUT_STREAM",
    "POOL_STREAM",
    "STREAMS",
    "PolicyEvaluation",
    "SeededSampler",
    "evaluate_policy",
    "evaluate_policy_async",
    "evaluation_table",
    "policy_engine",
    "recipe_harness",
    "rollout_seed",
    "rollout_seeds",
    "rollouts_digest",
    "run_harness",
    "run_pool_size",
    "sample_rollouts",
    "stream_seed",
    "tally_evaluation",
    "wilson_interval",
]
