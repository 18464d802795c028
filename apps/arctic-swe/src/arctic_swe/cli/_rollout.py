"""``arctic-swe rollout``: sample rollouts of a policy on deck tasks and summarise them."""

from __future__ import annotations

import argparse
from pathlib import Path

from arctic_swe._argtypes import Subparsers, non_negative_int, positive_int
from arctic_swe._backends import sandbox_backend
from arctic_swe._execute import runtime_errors, user_errors
from arctic_swe.cli._checks import load_deck_first, require_directories
from arctic_swe.cli._defaults import (
    DEFAULT_DECK,
    DEFAULT_POLICY,
    SPLITS,
    add_rollout_options,
)
from arctic_swe.cli._output import check_writable, console, print_json_line, solved_counter


def add_parser(subparsers: Subparsers) -> argparse.ArgumentParser:
    roll = subparsers.add_parser(
        "rollout",
        help="sample rollouts of a policy on deck tasks and summarise them",
        description="Print a readable trajectory, a summary table (solved, terminations, "
        "tokens, latency) and the summary as one JSON line; with --json only that line.",
    )
    roll.add_argument("--deck", default=DEFAULT_DECK, help="deck directory (default: %(default)s)")
    roll.add_argument(
        "--policy", default=DEFAULT_POLICY, help="checkpoint directory (default: %(default)s)"
    )
    roll.add_argument(
        "--tasks",
        type=positive_int,
        default=16,
        help="tasks, one rollout each (default: %(default)s)",
    )
    roll.add_argument(
        "--split", choices=SPLITS, default="pool", help="deck split (default: %(default)s)"
    )
    roll.add_argument(
        "--show",
        type=non_negative_int,
        default=1,
        help="trajectories to print (default: %(default)s)",
    )
    roll.add_argument(
        "--seed", type=non_negative_int, default=0, help="sampling seed (default: %(default)s)"
    )
    add_rollout_options(roll)
    roll.add_argument(
        "--json",
        action="store_true",
        help="print only the summary, as one JSON line on stdout (for scripts)",
    )
    roll.add_argument(
        "--trajectories",
        metavar="PATH",
        default=None,
        help="also write the trajectories as JSON lines",
    )
    return roll


def run(args: argparse.Namespace) -> int:
    """Sample rollouts of the policy on deck tasks; print trajectories and the summary."""
    # the paths first: a typo must not wait for torch to load
    deck = load_deck_first(args.deck)
    if args.trajectories:
        check_writable(args.trajectories)
    require_directories([args.policy], "--policy")
    import asyncio

    import torch

    from arctic_swe._progress import stage_progress
    from arctic_swe.chat import ChatError
    from arctic_swe.deck import StoredDeckError
    from arctic_swe.engine import EngineError
    from arctic_swe.evaluate import policy_engine, sample_rollouts
    from arctic_swe.harness import HarnessError, summary, summary_table, trajectory_view
    from arctic_swe.model import PolicyError
    from swe_sandbox import SandboxError

    torch.set_num_threads(args.threads)
    with (
        user_errors(ChatError, StoredDeckError, HarnessError, PolicyError),
        runtime_errors(EngineError, SandboxError),
    ):
        tasks = [task.spec for task in deck.split(args.split)[: args.tasks]]
        _, tokenizer, engine = policy_engine(
            args.policy, len(tasks), workers=args.workers, seed=args.seed
        )
        with stage_progress(console(stderr=True)) as progress:
            bar = progress.add_task("rollouts", total=len(tasks), info="")
            trajectories = asyncio.run(
                sample_rollouts(
                    engine,
                    tasks,
                    tokenizer,
                    workers=args.workers,
                    backend=sandbox_backend(args.backend),
                    on_done=solved_counter(progress, bar),
                )
            )
    if args.trajectories:
        Path(args.trajectories).write_text("".join(t.to_json() + "\n" for t in trajectories))
    if not args.json:
        out = console()
        for trajectory in trajectories[: args.show]:
            out.print(trajectory_view(trajectory))
        out.print(summary_table(trajectories))
    print_json_line(summary(trajectories))
    return 0
