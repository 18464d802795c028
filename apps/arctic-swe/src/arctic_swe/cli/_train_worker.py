"""``arctic-swe train-worker``: one rank of the FSDP2 trainer process, started by ``torchrun``.

``torchrun --nproc-per-node N -m arctic_swe.distributed ...`` runs the same options. Rank 0
serves the orchestrator over HTTP and prints one JSON ready line on stdout; the other ranks
follow its commands. Only the standard library is imported at module level: the parser must
stay instant.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from arctic_swe._argtypes import non_negative_int, positive_int
from arctic_swe.cli._execute import CommandError, execute
from arctic_swe.cli._registry import Subparsers

_DESCRIPTION = (
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


def add_parser(subparsers: Subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "train-worker",
        help="one rank of the FSDP2 trainer process (run it under torchrun)",
        description=_DESCRIPTION,
    )
    add_worker_options(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    """Join the torchrun job, serve (rank 0) or follow (other ranks) until shutdown."""
    # the inputs first, with light imports only: a typo must not wait for torch to load
    from arctic_swe.config import RunConfig, RunConfigError, load_toml

    policy = Path(args.policy)
    if not (policy / "config.json").is_file():
        raise CommandError(f"{policy} is not a checkpoint directory (no config.json)")
    try:
        config = load_toml(args.config) if args.config else RunConfig()
    except RunConfigError as exc:
        raise CommandError(str(exc)) from exc
    import asyncio

    from arctic_swe.distributed._errors import TrainerCheckpointError
    from arctic_swe.distributed._service import serve
    from arctic_swe.distributed._worker import WorkerOptions, start_worker, stop_worker
    from arctic_swe.model import PolicyError

    options = WorkerOptions(
        policy=policy,
        config=config,
        run_dir=Path(args.run_dir),
        resume=args.resume,
        threads=args.threads,
        collective_timeout_s=float(args.collective_timeout),
    )
    try:
        worker = start_worker(options)
    except (PolicyError, TrainerCheckpointError) as exc:
        raise CommandError(str(exc)) from exc
    if worker.rank != 0:
        worker.follow()
        stop_worker()
        return 0
    code = asyncio.run(serve(worker, args.host, args.port))
    if code != 0:
        # Some rank is gone: tearing the process group down could wait on it forever.
        sys.stdout.flush()
        os._exit(code)
    stop_worker()
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m arctic_swe.distributed``: the same options as ``arctic-swe train-worker``."""
    parser = argparse.ArgumentParser(
        prog="python -m arctic_swe.distributed", description=_DESCRIPTION
    )
    add_worker_options(parser)
    return execute(run, parser.parse_args(sys.argv[1:] if argv is None else argv))
