"""``arctic-swe cluster``: one launcher for every process of a run (engines, trainer, loop).

``cluster up CONFIG --run-dir DIR`` checks the topology and the machine, starts the engines and
the torchrun trainer, waits for them, runs the loop and stops everything at the end, on Ctrl-C,
on SIGTERM and when any process dies. ``cluster check CONFIG`` runs only the checks;
``--dry-run`` prints the command lines; ``cluster loop`` is the loop child ``up`` starts.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING

from arctic_swe._argtypes import Subparsers, non_negative_int, positive_int
from arctic_swe._backends import SANDBOX_BACKENDS
from arctic_swe._execute import (
    FAILURE_EXIT,
    CommandError,
    CommandInterruptedError,
    error,
    user_errors,
)
from arctic_swe.cli._checks import require_file
from arctic_swe.cli._defaults import DEFAULT_DECK, DEFAULT_POLICY
from arctic_swe.cli._output import console

if TYPE_CHECKING:
    from arctic_swe.cluster import ClusterConfig, UpOutcome


def add_parser(subparsers: Subparsers) -> argparse.ArgumentParser:
    cluster = subparsers.add_parser(
        "cluster",
        help="start every process of a run from one topology TOML (engines, trainer, loop)",
        description="One topology file describes the model, the engines (arctic-swe serve or "
        "vllm serve), the torchrun trainer, the sandboxes and the loop. Exit codes: 0 done, "
        "2 bad config or failed check (nothing started), 1 an engine, the trainer or the loop "
        "failed (the error line names it); 130/143 on Ctrl-C/SIGTERM. Every process is stopped "
        "on the way out.",
    )
    commands = cluster.add_subparsers(dest="cluster_command", metavar="SUBCOMMAND")
    up = commands.add_parser(
        "up",
        help="check, start every process, run the loop, stop everything",
        description="Logs go to DIR/logs/<process>.log; the resolved topology, the loop's "
        "config and the process table to DIR/cluster/; metrics to DIR/metrics.jsonl. Ends "
        "with a summary table: wall time, updates completed, the final pool evaluation and "
        "where the metrics, plots and logs are.",
    )
    _topology_options(up)
    up.add_argument("--run-dir", required=True, help="run directory (must not hold a run)")
    up.add_argument(
        "--dry-run", action="store_true", help="print the exact command lines; start nothing"
    )
    up.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --run-dir: the trainer from its last sharded checkpoint, the "
        "loop from its last checkpoint (servers start afresh and catch up)",
    )
    check = commands.add_parser(
        "check",
        help="only the checks of `up` (checkpoint, URLs, ranks vs devices, ports, sandboxes)",
    )
    _topology_options(check)
    loop = commands.add_parser(
        "loop",
        help="the orchestrator loop against running servers (the last process `up` starts)",
        description="Runs the RL loop of `overfit` on --config (engine.kind = http with "
        "engine.urls; trainer.kind = remote with trainer.url when the trainer is a torchrun "
        "process), writing metrics and checkpoints into --run-dir.",
    )
    loop.add_argument("--run-dir", required=True, help="run directory")
    loop.add_argument("--config", required=True, help="the loop's TOML (RUN/cluster/loop.toml)")
    loop.add_argument("--deck", default=DEFAULT_DECK, help="deck dir (default: %(default)s)")
    loop.add_argument(
        "--policy", default=DEFAULT_POLICY, help="checkpoint dir (default: %(default)s)"
    )
    loop.add_argument("--resume", action="store_true", help="continue from the last checkpoint")
    loop.add_argument(
        "--sandbox",
        choices=SANDBOX_BACKENDS,
        metavar="NAME",
        default="namespace",
        help="sandbox backend, one of %(choices)s (default: %(default)s)",
    )
    return cluster


def _topology_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", metavar="CONFIG", help="topology TOML, e.g. configs/b200.toml")
    parser.add_argument("--updates", type=positive_int, default=None, help="override run.updates")
    parser.add_argument(
        "--model", default=None, metavar="DIR", help="override model.path (checkpoint dir)"
    )
    parser.add_argument(
        "--node-rank",
        type=non_negative_int,
        default=None,
        help="override trainer.node_rank (multi-node: nodes > 0 start only their trainer ranks)",
    )


def run(args: argparse.Namespace) -> int:
    if args.cluster_command == "loop":
        require_file(args.config, "--config")  # before run_loop loads torch
        from arctic_swe.cluster import run_loop

        return run_loop(
            Path(args.run_dir),
            Path(args.config),
            Path(args.deck),
            Path(args.policy),
            args.sandbox,
            console(stderr=True),
            resume=args.resume,
        )
    if args.cluster_command not in ("up", "check"):
        raise CommandError("cluster needs a subcommand: up, check or loop (see --help)")
    config = _load(args)
    if args.cluster_command == "up" and args.dry_run:
        return _dry_run(config, args)
    model_dir = _preflight(config, args)
    if args.cluster_command == "check":
        console().print(f"ok: {args.config} can start here (model {model_dir})")
        return 0
    return _up(config, args, model_dir)


def _load(args: argparse.Namespace) -> ClusterConfig:
    from arctic_swe.cluster import ClusterConfigError, load_cluster, with_overrides

    with user_errors(ClusterConfigError):
        config = load_cluster(args.config)
        return with_overrides(
            config, updates=args.updates, model=args.model, node_rank=args.node_rank
        )


def _dry_run(config: ClusterConfig, args: argparse.Namespace) -> int:
    from arctic_swe.cluster import plan_cluster

    model = config.model.path or "MODEL_DIR"
    plan = plan_cluster(config, Path(args.run_dir), model, resume=args.resume)
    out = console()
    if not config.model.path:
        out.print("# model.path is not set: `up` refuses to start until it is (or --model DIR)")
    for spec in plan.processes:
        out.print(f"# {spec.name}", highlight=False)
        print(spec.shell_line(), flush=True)
    return 0


def _preflight(config: ClusterConfig, args: argparse.Namespace) -> Path:
    import asyncio

    from arctic_swe.cluster import PreflightError, preflight

    run_dir = Path(args.run_dir) if getattr(args, "run_dir", None) else None
    resume = bool(getattr(args, "resume", False))
    with user_errors(PreflightError):
        return asyncio.run(preflight(config, run_dir, resume=resume))


def _up(config: ClusterConfig, args: argparse.Namespace, model_dir: Path) -> int:
    import asyncio

    import attrs

    from arctic_swe.cluster import plan_cluster, run_cluster

    config = attrs.evolve(config, model=attrs.evolve(config.model, path=str(model_dir)))
    run_dir = Path(args.run_dir)
    plan = plan_cluster(config, run_dir, str(model_dir), resume=args.resume)
    note = console(stderr=True)
    began = time.monotonic()
    try:
        outcome = asyncio.run(run_cluster(config, plan, run_dir, note))
    except KeyboardInterrupt:  # SIGINT or SIGTERM: every child was stopped on the way out
        raise CommandInterruptedError(
            f"- every process of the cluster stopped; logs in {run_dir / 'logs'}; "
            f"resume with: {_resume_command(args)}"
        ) from None
    _print_summary(run_dir, outcome, time.monotonic() - began, config.loop.run.updates)
    if outcome.code:
        hint = ""
        if (run_dir / "config.toml").exists():  # the loop got far enough to leave a run
            hint = f"; resume with: {_resume_command(args)}"
        return error(f"{outcome.message}{hint}", code=FAILURE_EXIT)
    return 0


def _print_summary(run_dir: Path, outcome: UpOutcome, wall_seconds: float, planned: int) -> None:
    """The end-of-run table on stdout (a failed run too: it says how far the run got)."""
    from arctic_swe.cluster import cluster_summary, cluster_summary_table

    result = outcome.message if not outcome.code else f"failed: {outcome.failed}"
    summary = cluster_summary(run_dir, outcome=result, wall_seconds=wall_seconds, planned=planned)
    console().print(cluster_summary_table(summary))


def _resume_command(args: argparse.Namespace) -> str:
    import shlex

    argv = ["arctic-swe", "cluster", "up", args.config, "--run-dir", args.run_dir, "--resume"]
    if args.model is not None:
        argv += ["--model", args.model]
    if args.updates is not None:
        argv += ["--updates", str(args.updates)]
    return shlex.join(argv)
