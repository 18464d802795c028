"""Constants every ``arctic-swe`` command shares: default paths, the warm start's defaults,
the component list, the ablation flags and the options of every command that runs rollouts
(one place, so ``overfit``'s implicit warm start and ``arctic-swe warmstart`` cannot drift
apart)."""

from __future__ import annotations

import argparse

from arctic_swe._argtypes import positive_int
from arctic_swe._backends import SANDBOX_BACKENDS

#: The workspace members the application composes, in the architecture's order.
COMPONENTS: tuple[str, ...] = (
    "swe-formatcheck",
    "cispo-loss",
    "hybrid-numerics",
    "load-router",
    "deck-evictor",
    "swe-sandbox",
    "swe-curate",
)

DEFAULT_DECK = "runs/deck"
DEFAULT_POLICY = "runs/warmstart"
DEFAULT_RUN_DIR = "runs/overfit"

#: Where ``deck build`` saves the tokenizer, inside the deck directory.
TOKENIZER_DIR = "tokenizer"

#: The warm start's defaults (``arctic-swe warmstart`` and the one ``overfit`` runs itself).
WARMSTART_TASKS = 200
WARMSTART_STEPS = 300
WARMSTART_WORKERS = 2

#: Ablation flag -> (the ``--set`` it stands for, what it changes): each removes one component
#: of the stable recipe (Arctic-SWE §3).
ABLATIONS: dict[str, tuple[str, str]] = {
    "--no-gated-reward": ("harness.gated_reward=false", "gated reward off"),
    "--lenient-format": ("harness.strict_format=false", "raw format check off (lenient parse)"),
    "--no-fp32-numerics": (
        "trainer.fp32_numerics=false",
        "FP32 numerics off (the engines compute and keep their recurrent state in bf16)",
    ),
    "--no-cache-invalidation": (
        "engine.invalidate_caches=false",
        "keep stale caches across weight refreshes",
    ),
    "--session-hash": ("engine.routing=session_hash", "session-hash routing, not least-loaded"),
    "--no-eviction": ("deck.eviction=false", "never retire tasks"),
    "--clip": ("trainer.ratio_control=ppo_clip", "PPO clipping instead of the IcePop mask"),
    "--rollout-mean": ("trainer.aggregation=rollout_mean", "per-rollout mean, not token mean"),
}

#: The deck's splits, as ``--split`` accepts them.
SPLITS: tuple[str, ...] = ("pool", "heldout", "warmstart")


def add_rollout_options(parser: argparse.ArgumentParser) -> None:
    """``--workers``, ``--threads`` and ``--backend``, shared by the commands that run rollouts."""
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=16,
        help="rollouts at once; each holds a sandbox, and more also means larger decode batches "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--threads", type=positive_int, default=2, help="torch CPU threads (default: %(default)s)"
    )
    parser.add_argument(
        "--backend",
        choices=SANDBOX_BACKENDS,
        metavar="NAME",
        default="namespace",
        help="sandbox backend: namespace (daemon-less, needs root), docker (a local engine; "
        "each task runs in its environment image) or another swe-sandbox backend; one of "
        "%(choices)s (default: %(default)s)",
    )
