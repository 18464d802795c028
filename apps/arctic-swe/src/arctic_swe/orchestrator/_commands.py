"""``arctic-swe overfit`` and ``arctic-swe compare``.

Registered into the main parser by :func:`register`; each sub-command stores its handler as
``args.handler`` so ``arctic_swe._cli.main`` dispatches with one line.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from arctic_swe._argtypes import positive_int

#: Ablation flag -> the ``--set`` it stands for (the paper's Table 9 / figure ablations).
ABLATIONS: dict[str, tuple[str, str]] = {
    "--no-gated-reward": ("harness.gated_reward=false", "gated reward off"),
    "--lenient-format": ("harness.strict_format=false", "raw format check off (lenient parse)"),
    "--no-fp32-numerics": (
        "trainer.fp32_numerics=false",
        "FP32 numerics off (bf16 recurrent-state cache in the engines)",
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

DEFAULT_RUN_DIR = "runs/overfit"
DEFAULT_DECK = "runs/deck"
DEFAULT_POLICY = "runs/warmstart"


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``overfit`` and ``compare`` to the ``arctic-swe`` sub-parsers."""
    overfit = commands.add_parser(
        "overfit",
        help="run the overfitting stress test (asynchronous RL on a small pool)",
        description="Build or reuse the deck, warm-start or reuse the policy, then train with "
        "the full asynchronous recipe; leaves metrics, plots and checkpoints in --run-dir.",
    )
    overfit.add_argument("--run-dir", default=DEFAULT_RUN_DIR, help="run directory")
    overfit.add_argument("--preset", default="tiny", help="configuration preset (tiny, paper)")
    overfit.add_argument("--config", default=None, help="TOML file on top of the preset")
    overfit.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="SECTION.FIELD=VALUE",
        help="override one config field (repeatable), e.g. --set trainer.lr=1e-4",
    )
    overfit.add_argument("--resume", action="store_true", help="continue the run in --run-dir")
    overfit.add_argument("--deck", default=DEFAULT_DECK, help="deck directory (built if absent)")
    overfit.add_argument(
        "--policy", default=DEFAULT_POLICY, help="warm-start checkpoint (trained if absent)"
    )
    overfit.add_argument(
        "--threads",
        type=positive_int,
        default=1,
        help="torch CPU threads of the RL loop: the tiny policy's ops are too small to split, "
        "and the engine and trainer threads already run side by side (measured 1.3x faster "
        "than 2 on 2 cores)",
    )
    overfit.add_argument(
        "--warmstart-threads",
        type=positive_int,
        default=2,
        help="torch CPU threads of the warm start, when --policy has to be built (SFT "
        "batches are large enough to split)",
    )
    for flag, (_, meaning) in ABLATIONS.items():
        overfit.add_argument(flag, action="store_true", help=f"ablation: {meaning}")
    overfit.set_defaults(handler=_overfit)

    compare = commands.add_parser(
        "compare",
        help="plot several runs against each other",
        description="Overlay the curves of RUN directories and print one summary per run.",
    )
    compare.add_argument("runs", nargs="+", help="run directories (each with metrics.jsonl)")
    compare.add_argument("--out", default=".", help="where to write the comparison PNGs")
    compare.set_defaults(handler=_compare)


def _overfit(args: argparse.Namespace) -> int:
    from arctic_swe.orchestrator._cli_impl import overfit_command

    return overfit_command(args)


def _compare(args: argparse.Namespace) -> int:
    from arctic_swe.orchestrator._cli_impl import compare_command

    return compare_command(args)


def ablation_overrides(args: argparse.Namespace) -> list[str]:
    """The ``--set`` strings the chosen ablation flags stand for."""
    chosen = []
    for flag, (assignment, _) in ABLATIONS.items():
        if getattr(args, flag.lstrip("-").replace("-", "_"), False):
            chosen.append(assignment)
    return chosen


def run_dir_arg(args: argparse.Namespace) -> Path:
    return Path(args.run_dir)
