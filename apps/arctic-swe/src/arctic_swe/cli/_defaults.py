"""Constants every ``arctic-swe`` command shares: default paths, the component list, the
deck's splits and the options of every command that runs rollouts. The defaults the loop needs
too (the tokenizer's place in a deck, the warm start's budget) are :mod:`arctic_swe.config`'s;
the ablation flags are :data:`arctic_swe.ablate.VARIANTS`."""

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
