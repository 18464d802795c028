"""One trainer rank, started by ``torchrun``: ``python -m arctic_swe.distributed`` (and the
``arctic-swe train-worker`` command, which parses the same options and calls
:func:`run_worker`). Rank 0 serves the orchestrator over HTTP and prints one JSON ready line on
stdout; the other ranks follow its commands."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

from arctic_swe._execute import CommandError, execute
from arctic_swe.config import WORKER_DESCRIPTION, RunConfig, add_worker_options, worker_inputs
from arctic_swe.distributed._errors import TrainerCheckpointError
from arctic_swe.distributed._service import serve
from arctic_swe.distributed._worker import WorkerOptions, start_worker, stop_worker
from arctic_swe.model import PolicyError


def run_worker(policy: Path, config: RunConfig, args: argparse.Namespace) -> int:
    """Join the torchrun job, serve (rank 0) or follow (other ranks) until shutdown; ``policy``
    and ``config`` are the checked inputs (:func:`arctic_swe.config.worker_inputs`), ``args``
    the other options of :func:`arctic_swe.config.add_worker_options`."""
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
        prog="python -m arctic_swe.distributed", description=WORKER_DESCRIPTION
    )
    add_worker_options(parser)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    return execute(lambda args: run_worker(*worker_inputs(args), args), args)
