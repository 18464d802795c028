"""The command line of one trainer rank, shared by ``arctic-swe train-worker`` and ``python -m
arctic_swe.distributed``: its options and the cheap checks of what they name.

It lives here, not in :mod:`arctic_swe.distributed`, because the ``arctic-swe`` parser reads
it to build ``--help``, which must stay instant: this package imports neither torch nor the
trainer. A bad ``--policy`` or ``--config`` is one ``error:`` line before torch loads.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from arctic_swe._argtypes import non_negative_int, positive_int
from arctic_swe._execute import CommandError
from arctic_swe.config._errors import RunConfigError
from arctic_swe.config._load import load_toml
from arctic_swe.config._schema import RunConfig

WORKER_DESCRIPTION = (
    "One rank of the distributed trainer (start it with torchrun: `torchrun --standalone "
    "--nproc-per-node N -m arctic_swe.distributed --policy DIR --run-dir DIR`). The policy is "
    "sharded over the ranks with FSDP2 (gloo on CPU, nccl on GPU); each /step splits the batch "
    "across the ranks balanced by tokens and takes one CISPO + AdamW step with the loss "
    "divided by the global trainable-token count. Rank 0 serves GET /health, POST /step, "
    'POST /checkpoint and POST /shutdown and prints {"event": "ready", "role": "trainer", '
    '"url": ...} when listening.'
)


def add_worker_options(parser: argparse.ArgumentParser) -> None:
    """The options of ``arctic-swe train-worker`` and ``python -m arctic_swe.distributed``."""
    parser.add_argument(
        "--policy",
        required=True,
        metavar="DIR",
        help="local Hugging Face checkpoint directory to start from (config.json, "
        "model.safetensors, tokenizer); its tokenizer files are copied into each export",
    )
    parser.add_argument(
        "--config",
        metavar="RUN.toml",
        default=None,
        help="run config whose [trainer] (and [run].seed) section is used; default: the tiny "
        "preset's",
    )
    parser.add_argument(
        "--run-dir",
        required=True,
        metavar="DIR",
        help="where weights/policy-vN/model.safetensors and checkpoints/trainer/step-N/ are written",
    )
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default: %(default)s)")
    parser.add_argument(
        "--port",
        type=non_negative_int,
        default=0,
        help="TCP port of rank 0's service; 0 picks a free one, printed in the ready line "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="restore the latest sharded checkpoint of --run-dir (written at any rank count)",
    )
    parser.add_argument(
        "--threads",
        type=positive_int,
        default=None,
        help="torch CPU threads per rank (default: torch's choice)",
    )
    parser.add_argument(
        "--collective-timeout",
        type=positive_int,
        default=600,
        metavar="SECONDS",
        help="a collective that does not complete in this time fails the job "
        "(default: %(default)s)",
    )


def worker_inputs(args: argparse.Namespace) -> tuple[Path, RunConfig]:
    """The ``--policy`` directory and the run config (``--config``, else the defaults),
    checked cheaply; a bad one is a :class:`CommandError` (exit 2)."""
    policy = Path(args.policy)
    if not (policy / "config.json").is_file():
        raise CommandError(f"{policy} is not a checkpoint directory (no config.json)")
    try:
        config = load_toml(args.config) if args.config else RunConfig()
    except RunConfigError as exc:
        raise CommandError(str(exc)) from exc
    return policy, config
