"""``arctic-swe evaluate``: sampled success of one or more policies on a deck split."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from arctic_swe._argtypes import Subparsers, non_negative_int, positive_int
from arctic_swe._backends import sandbox_backend
from arctic_swe._execute import CommandError, runtime_errors, user_errors
from arctic_swe._streams import CHECK_STREAM, STREAMS
from arctic_swe.cli._checks import load_deck_first, require_directories
from arctic_swe.cli._defaults import DEFAULT_DECK, SPLITS, add_rollout_options
from arctic_swe.cli._output import check_writable, console, print_json_line, solved_counter


def add_parser(subparsers: Subparsers) -> argparse.ArgumentParser:
    ev = subparsers.add_parser(
        "evaluate",
        help="sampled success of one or more policies on a deck split (warm start vs trained)",
        description="Roll out every task of the split --samples times per policy (temperature 1, "
        "gated reward, real sandboxes) and print solved, rate, Wilson 95%% interval, change "
        "against the first policy, and how the rollouts ended. A POLICY is a policy directory, "
        "a checkpoint directory, or a run directory (its latest checkpoint).",
    )
    ev.add_argument("policies", nargs="+", metavar="POLICY", help="policy, checkpoint or run dir")
    ev.add_argument("--deck", default=DEFAULT_DECK, help="deck directory (default: %(default)s)")
    ev.add_argument(
        "--split", choices=SPLITS, default="pool", help="deck split (default: %(default)s)"
    )
    ev.add_argument(
        "--tasks",
        type=positive_int,
        default=None,
        help="first N tasks of the split (default: with --split pool and a run directory "
        "among the POLICYs, the run's stress-test pool, deck.pool_size; else all)",
    )
    ev.add_argument(
        "--samples", type=positive_int, default=4, help="rollouts per task (default: %(default)s)"
    )
    ev.add_argument(
        "--seed",
        type=non_negative_int,
        default=0,
        help="sampling seed, the same for every policy: turn t of sample s of the k-th task "
        "samples from a stream derived from (seed, --stream, k, s, t), so the same weights give "
        "the same rollouts (default: %(default)s)",
    )
    ev.add_argument(
        "--stream",
        choices=STREAMS,
        default=CHECK_STREAM,
        help="named sampling streams: 'check' (the default) is disjoint from the streams a "
        "run's own evaluations drew, so checking a run's final weights is an independent "
        "measurement; 'pool' (with the run's seed, --split pool) and 'heldout' (--split "
        "heldout) redraw the run's in-run pool and held-out evaluations exactly "
        "(default: %(default)s)",
    )
    add_rollout_options(ev)
    ev.add_argument(
        "--json",
        action="store_true",
        help="print only one JSON line per policy on stdout, not the table (for scripts)",
    )
    ev.add_argument(
        "--out", metavar="PATH", default=None, help="also write one JSON line per policy to PATH"
    )
    return ev


def run(args: argparse.Namespace) -> int:
    """Sampled success of each policy on a deck split, with Wilson intervals, in one table."""
    # the paths first: a typo must not wait for torch to load
    require_directories(args.policies, "POLICY")
    deck = load_deck_first(args.deck)
    if args.out:
        check_writable(args.out)
    import torch

    from arctic_swe._progress import stage_progress
    from arctic_swe.chat import ChatError
    from arctic_swe.config import RunConfigError
    from arctic_swe.deck import StoredDeckError
    from arctic_swe.engine import EngineError
    from arctic_swe.evaluate import evaluate_policy, evaluation_table, run_harness, run_pool_size
    from arctic_swe.harness import TINY_HARNESS, HarnessError
    from arctic_swe.model import PolicyError
    from arctic_swe.trainer import TrainerError
    from swe_sandbox import SandboxError

    torch.set_num_threads(args.threads)
    note = console(stderr=True)
    results = []
    with (
        user_errors(ChatError, StoredDeckError, HarnessError, PolicyError, RunConfigError),
        runtime_errors(EngineError, SandboxError, TrainerError),
    ):
        count = args.tasks
        if count is None and args.split == "pool":
            count = run_pool_size(args.policies)
            if count is not None:
                note.print(f"on the run's stress-test pool: the first {count} pool tasks (--tasks)")
        # a run directory's episode budgets (under the recipe's gate): its own pool evaluation's
        harness = run_harness(args.policies) or TINY_HARNESS
        tasks = [task.spec for task in deck.split(args.split)[:count]]
        if not tasks:
            raise CommandError(f"the deck's {args.split} split is empty")
        backend = sandbox_backend(args.backend)
        with stage_progress(note) as progress:
            for policy in args.policies:
                bar = progress.add_task(str(policy), total=len(tasks) * args.samples, info="")
                results.append(
                    evaluate_policy(
                        policy,
                        tasks,
                        split=args.split,
                        samples=args.samples,
                        seed=args.seed,
                        stream=args.stream,
                        workers=args.workers,
                        backend=backend,
                        on_done=solved_counter(progress, bar),
                        harness=harness,
                    )
                )
    if args.out:
        Path(args.out).write_text("".join(json.dumps(r.to_dict()) + "\n" for r in results))
    if args.json:
        for result in results:
            print_json_line(result.to_dict())
    else:
        title = f"{args.split} split, {args.samples} per task"
        console().print(evaluation_table(results, title=title))
    return 0
