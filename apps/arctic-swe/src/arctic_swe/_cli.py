"""The ``arctic-swe`` command line.

``components`` lists the installed Arctic-SWE packages; ``deck build``, ``warmstart`` and
``rollout`` (issue #10) build the embedded deck and tokenizer, warm-start the tiny policy on the
scripted expert, and watch it solve tasks; ``evaluate`` measures sampled success of policies
side by side. ``overfit`` and ``compare`` (issue #11) live in ``arctic_swe.orchestrator``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arctic_swe._argtypes import non_negative_int, positive_int
from arctic_swe._version import __version__

if TYPE_CHECKING:  # heavy imports (torch, transformers) load only when a command runs
    from rich.console import Console

    from arctic_swe.harness import Trajectory
#: The workspace members the application composes, in DESIGN.md §2 order.
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


TOKENIZER_DIR = "tokenizer"


def deck_build(args: argparse.Namespace, console: Console) -> int:
    """Generate the deck, train the tokenizer on it, validate with Pipeline 1."""
    from rich.table import Table

    from arctic_swe._progress import stage_progress
    from arctic_swe.chat import save_tokenizer, train_tokenizer
    from arctic_swe.deck import DeckConfig, validate_deck, write_deck
    from arctic_swe.harness import TINY_HARNESS
    from arctic_swe.warmstart import deck_corpus
    from swe_sandbox import NamespaceBackend

    config = DeckConfig(args.seed, args.pool_size, args.heldout_size, args.warmstart_size)
    deck = write_deck(args.out, config)
    tokenizer = train_tokenizer(deck_corpus(deck, TINY_HARNESS), args.vocab_size)
    save_tokenizer(tokenizer, Path(args.out) / TOKENIZER_DIR)
    console.print(
        f"deck written to {args.out}: pool {config.pool_size}, held-out {config.heldout_size}, "
        f"warm-start {config.warmstart_size}; tokenizer of {len(tokenizer)} tokens"
    )
    if args.validate == "none":
        return 0
    splits = ("pool", "heldout")
    chosen = [task for split in splits for task in deck.split(split)]
    if args.validate == "sample":
        step = max(1, len(chosen) // args.sample)
        chosen = chosen[::step][: args.sample]
    with stage_progress(console) as progress:
        bar = progress.add_task("Pipeline 1", total=len(chosen), info="")
        _, report = validate_deck(
            deck,
            NamespaceBackend(),
            splits=splits,
            reruns=args.reruns,
            workers=args.workers,
            only={task.instance_id for task in chosen},
            on_task=lambda r: progress.update(
                bar, advance=1, info=f"{r.instance_id} {r.verdict.value}"
            ),
        )
    table = Table(title="Pipeline 1")
    table.add_column("admitted", justify="right")
    table.add_column("rejected", justify="right")
    table.add_column("reused", justify="right")
    table.add_row(str(len(report.admitted)), str(len(report.rejected)), str(report.skipped))
    console.print(table)
    for task_id, verdict in report.rejected.items():
        console.print(f"[red]rejected[/red] {task_id}: {verdict}")
    return 0 if report.ok else 1


def warmstart(args: argparse.Namespace, console: Console) -> int:
    """Expert trajectories on the warm-start split, SFT, checkpoint."""
    import torch

    from arctic_swe.chat import load_tokenizer
    from arctic_swe.deck import load_deck
    from arctic_swe.warmstart import InductionConfig, SFTConfig, warm_start_live
    from swe_sandbox import NamespaceBackend

    torch.set_num_threads(args.threads)
    deck = load_deck(args.deck)
    tokenizer = load_tokenizer(Path(args.deck) / TOKENIZER_DIR)
    tasks = deck.split("warmstart")[: args.tasks]
    sft = SFTConfig(steps=args.steps, batch_size=args.batch_size, lr=args.lr, seed=args.seed)
    induction = InductionConfig(steps=args.induction_steps, seed=args.seed)
    warm_start_live(
        tasks,
        tokenizer,
        args.out,
        NamespaceBackend(),
        console,
        sft=sft,
        induction=induction,
        model_seed=args.seed,
        concurrency=args.workers,
    )
    return 0


def rollout(args: argparse.Namespace, console: Console) -> int:
    """Sample rollouts of the policy on deck tasks; print one trajectory and the summary."""
    import torch

    from arctic_swe._progress import stage_progress
    from arctic_swe.deck import load_deck
    from arctic_swe.evaluate import policy_engine, sample_rollouts
    from arctic_swe.harness import summary, summary_table, trajectory_view

    torch.set_num_threads(args.threads)
    deck = load_deck(args.deck)
    tasks = [task.spec for task in deck.split(args.split)[: args.tasks]]
    _, tokenizer, engine = policy_engine(
        args.policy, len(tasks), workers=args.workers, seed=args.seed
    )
    with stage_progress(console) as progress:
        bar = progress.add_task("rollouts", total=len(tasks), info="")
        done = _solved_counter(progress, bar)
        trajectories = asyncio.run(
            sample_rollouts(engine, tasks, tokenizer, workers=args.workers, on_done=done)
        )
    for trajectory in trajectories[: args.show]:
        console.print(trajectory_view(trajectory))
    console.print(summary_table(trajectories))
    if args.json:
        Path(args.json).write_text("".join(t.to_json() + "\n" for t in trajectories))
    console.print(json.dumps(summary(trajectories)))
    return 0


def evaluate(args: argparse.Namespace, console: Console) -> int:
    """Sampled success of each policy on a deck split, with Wilson intervals, in one table."""
    import torch

    from arctic_swe._progress import stage_progress
    from arctic_swe.deck import load_deck
    from arctic_swe.evaluate import evaluate_policy, evaluation_table, run_pool_size

    torch.set_num_threads(args.threads)
    deck = load_deck(args.deck)
    count = args.tasks
    if count is None and args.split == "pool":
        count = run_pool_size(args.policies)
        if count is not None:
            console.print(f"on the run's stress-test pool: the first {count} pool tasks (--tasks)")
    tasks = [task.spec for task in deck.split(args.split)[:count]]
    if not tasks:
        console.print(f"[red]error:[/red] the deck's {args.split} split is empty")
        return 2
    results = []
    with stage_progress(console) as progress:
        for policy in args.policies:
            bar = progress.add_task(str(policy), total=len(tasks) * args.samples, info="")
            done = _solved_counter(progress, bar)
            results.append(
                evaluate_policy(
                    policy,
                    tasks,
                    split=args.split,
                    samples=args.samples,
                    seed=args.seed,
                    workers=args.workers,
                    on_done=done,
                )
            )
    console.print(evaluation_table(results, title=f"{args.split} split, {args.samples} per task"))
    if args.json:
        Path(args.json).write_text("".join(json.dumps(r.to_dict()) + "\n" for r in results))
    return 0


def _solved_counter(progress: Any, bar: Any) -> Callable[[Trajectory], None]:
    """An ``on_done`` callback that advances ``bar`` and shows the running count solved."""
    solved = 0

    def done(trajectory: Trajectory) -> None:
        nonlocal solved
        solved += trajectory.solved
        progress.update(bar, advance=1, info=f"solved {solved}")

    return done


def component_versions() -> dict[str, str | None]:
    """Map each component distribution to its installed version (``None`` when absent)."""
    found: dict[str, str | None] = {}
    for name in COMPONENTS:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


def _add_deck_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    deck = commands.add_parser("deck", help="the embedded deck of generated Python repositories")
    actions = deck.add_subparsers(dest="deck_command", metavar="ACTION", required=True)
    build = actions.add_parser(
        "build",
        help="generate the deck, train the tokenizer on it, validate it with Pipeline 1",
        description="Write DIR/deck.json, DIR/repos/*, DIR/tokenizer/ and DIR/audit.jsonl.",
    )
    build.add_argument("--out", default=DEFAULT_DECK, help="deck directory (replaced)")
    build.add_argument("--seed", type=non_negative_int, default=0, help="deck seed")
    build.add_argument("--pool-size", type=positive_int, default=160, help="stress-test pool size")
    build.add_argument("--heldout-size", type=non_negative_int, default=40, help="held-out size")
    build.add_argument(
        "--warmstart-size", type=non_negative_int, default=200, help="warm-start split size"
    )
    build.add_argument("--vocab-size", type=positive_int, default=2048, help="BPE vocabulary size")
    build.add_argument(
        "--validate",
        choices=("all", "sample", "none"),
        default="sample",
        help="Pipeline 1 on every pool/held-out task, on an evenly spaced sample, or not at all",
    )
    build.add_argument("--sample", type=positive_int, default=16, help="tasks in the sample")
    build.add_argument("--reruns", type=positive_int, default=2, help="Pipeline 1 runs per tree")
    build.add_argument("--workers", type=positive_int, default=2, help="sandboxes in parallel")


def _add_warmstart_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    warm = commands.add_parser(
        "warmstart",
        help="SFT the tiny policy on scripted-expert trajectories (the RFT stage)",
        description="Run the expert on the warm-start split, fine-tune, write a checkpoint.",
    )
    warm.add_argument("--deck", default=DEFAULT_DECK, help="deck directory (deck build)")
    warm.add_argument("--out", default=DEFAULT_POLICY, help="checkpoint directory (replaced)")
    warm.add_argument(
        "--tasks", type=positive_int, default=200, help="warm-start tasks to use (the whole split)"
    )
    warm.add_argument(
        "--induction-steps",
        type=non_negative_int,
        default=200,
        help="stage 0: copy-task steps that give the random-init policy in-context copying "
        "(0 skips it)",
    )
    warm.add_argument("--steps", type=positive_int, default=300, help="SFT optimiser steps")
    warm.add_argument("--batch-size", type=positive_int, default=8, help="trajectories per step")
    warm.add_argument("--lr", type=float, default=3e-3, help="AdamW learning rate")
    warm.add_argument("--seed", type=non_negative_int, default=0, help="model and data seed")
    warm.add_argument("--workers", type=positive_int, default=2, help="expert sandboxes at once")
    warm.add_argument("--threads", type=positive_int, default=2, help="torch CPU threads")


def _add_rollout_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    roll = commands.add_parser(
        "rollout",
        help="sample rollouts of a policy on deck tasks and summarise them",
        description="Print a readable trajectory and a summary table (solved, terminations, "
        "tokens, latency).",
    )
    roll.add_argument("--deck", default=DEFAULT_DECK, help="deck directory")
    roll.add_argument("--policy", default=DEFAULT_POLICY, help="checkpoint directory")
    roll.add_argument("--tasks", type=positive_int, default=16, help="tasks (one rollout each)")
    roll.add_argument(
        "--split", choices=("pool", "heldout", "warmstart"), default="pool", help="deck split"
    )
    roll.add_argument("--show", type=non_negative_int, default=1, help="trajectories to print")
    roll.add_argument("--seed", type=non_negative_int, default=0, help="sampling seed")
    roll.add_argument(
        "--workers",
        type=positive_int,
        default=16,
        help="rollouts at once (each holds a sandbox; more also means larger decode batches)",
    )
    roll.add_argument("--threads", type=positive_int, default=2, help="torch CPU threads")
    roll.add_argument("--json", default=None, help="also write the trajectories as JSON lines")


def _add_evaluate_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ev = commands.add_parser(
        "evaluate",
        help="sampled success of one or more policies on a deck split (warm start vs trained)",
        description="Roll out every task of the split --samples times per policy (temperature 1, "
        "gated reward, real sandboxes) and print solved, rate, Wilson 95% interval, change "
        "against the first policy, and how the rollouts ended. A POLICY is a policy directory, "
        "a checkpoint directory, or a run directory (its latest checkpoint).",
    )
    ev.add_argument("policies", nargs="+", metavar="POLICY", help="policy, checkpoint or run dir")
    ev.add_argument("--deck", default=DEFAULT_DECK, help="deck directory")
    ev.add_argument(
        "--split", choices=("pool", "heldout", "warmstart"), default="pool", help="deck split"
    )
    ev.add_argument(
        "--tasks",
        type=positive_int,
        default=None,
        help="first N tasks of the split (default: with --split pool and a run directory "
        "among the POLICYs, the run's stress-test pool, deck.pool_size; else all)",
    )
    ev.add_argument("--samples", type=positive_int, default=4, help="rollouts per task")
    ev.add_argument(
        "--seed", type=non_negative_int, default=0, help="sampling seed (the same for every policy)"
    )
    ev.add_argument(
        "--workers",
        type=positive_int,
        default=16,
        help="rollouts at once (each holds a sandbox; more also means larger decode batches)",
    )
    ev.add_argument("--threads", type=positive_int, default=2, help="torch CPU threads")
    ev.add_argument("--json", default=None, help="also write one JSON line per policy")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="arctic-swe",
        description=(
            "Arctic-SWE: fully asynchronous RL of long-horizon software-engineering agents. "
            "Typical flow on one CPU machine: `deck build`, then `warmstart`, then `rollout` to check the "
            "warm-started policy, then `overfit` (the overfitting stress test), `evaluate` (warm "
            "start vs trained policy) and `compare`."
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.add_parser(
        "components",
        help="list the Arctic-SWE packages this application composes and their installed versions",
        description="Print one line per component: distribution name and installed version.",
    )
    _add_deck_parser(commands)
    _add_warmstart_parser(commands)
    _add_rollout_parser(commands)
    _add_evaluate_parser(commands)
    __import__("arctic_swe.orchestrator._commands").orchestrator._commands.register(commands)
    _show_defaults(parser)
    return parser


def _show_defaults(parser: argparse.ArgumentParser) -> None:
    """Give every (nested) sub-command's ``--help`` the defaults of its options."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_parser in action.choices.values():
                sub_parser.formatter_class = _DefaultsHelpFormatter
                _show_defaults(sub_parser)


class _DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Appends ``(default: X)`` to an option's help, except where there is no value to show."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        default = action.default
        # Identity, not equality: a default of 0 is a value worth showing, False is not.
        if default is None or default is False or default == [] or default is argparse.SUPPRESS:
            return action.help
        return super()._get_help_string(action)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``arctic-swe`` console script; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "components":
        missing = 0
        for name, found in component_versions().items():
            print(f"{name:<16} {found or 'NOT INSTALLED'}")
            missing += found is None
        return 1 if missing else 0
    if args.command in ("deck", "warmstart", "rollout", "evaluate"):
        return _run(args)
    if getattr(args, "handler", None) is not None:  # overfit, compare (issue #11)
        return int(args.handler(args))
    parser.print_help()
    return 0


def _run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from arctic_swe.chat import ChatError
    from arctic_swe.config import RunConfigError
    from arctic_swe.deck import DeckError
    from arctic_swe.harness import HarnessError
    from arctic_swe.model import PolicyError
    from arctic_swe.trainer import TrainerError
    from arctic_swe.warmstart import WarmStartError

    console = Console()
    command = {
        "deck": deck_build,
        "warmstart": warmstart,
        "rollout": rollout,
        "evaluate": evaluate,
    }[args.command]
    errors = (
        DeckError, ChatError, HarnessError, PolicyError, RunConfigError, TrainerError,
        WarmStartError,
    )  # fmt: skip
    try:
        return command(args, console)
    except errors as exc:
        console.print(f"[red]error:[/red] {exc}")
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
