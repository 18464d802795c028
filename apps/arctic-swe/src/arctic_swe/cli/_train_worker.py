"""``arctic-swe train-worker``: one rank of the FSDP2 trainer process, started by ``torchrun``.

``torchrun --nproc-per-node N -m arctic_swe.distributed ...`` runs the same options
(:func:`arctic_swe.config.add_worker_options`); the rank's work is
:func:`arctic_swe.distributed.run_worker`. Nothing heavy is imported at module level: the
parser must stay instant.
"""

from __future__ import annotations

import argparse

from arctic_swe._argtypes import Subparsers
from arctic_swe.config import WORKER_DESCRIPTION, add_worker_options, worker_inputs


def add_parser(subparsers: Subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "train-worker",
        help="one rank of the FSDP2 trainer process (run it under torchrun)",
        description=WORKER_DESCRIPTION,
    )
    add_worker_options(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    """Join the torchrun job, serve (rank 0) or follow (other ranks) until shutdown."""
    policy, config = worker_inputs(args)  # the inputs first: a typo must not wait for torch
    from arctic_swe.distributed import run_worker

    return run_worker(policy, config, args)
