"""``arctic-swe overfit``: the overfitting stress test (asynchronous RL on a small pool)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from arctic_swe._argtypes import Subparsers, positive_int
from arctic_swe._execute import CommandInterruptedError, runtime_errors, user_errors
from arctic_swe.ablate import ABLATION_FLAGS
from arctic_swe.cli._defaults import DEFAULT_DECK, DEFAULT_POLICY, DEFAULT_RUN_DIR
from arctic_swe.cli._output import console

if TYPE_CHECKING:
    from rich.console import Console

    from arctic_swe.config import RunConfig, RunDir
    from arctic_swe.metrics import RunSummary
    from arctic_swe.orchestrator import Inputs


def add_parser(subparsers: Subparsers) -> argparse.ArgumentParser:
    overfit = subparsers.add_parser(
        "overfit",
        help="run the overfitting stress test (asynchronous RL on a small pool)",
        description="Build or reuse the deck, warm-start or reuse the policy, then train with "
        "the full asynchronous recipe; leaves metrics, plots and checkpoints in --run-dir. "
        "Ctrl-C or SIGTERM stops cleanly; --resume continues.",
    )
    overfit.add_argument(
        "--run-dir", default=DEFAULT_RUN_DIR, help="run directory (default: %(default)s)"
    )
    add_config_options(overfit)
    overfit.add_argument("--resume", action="store_true", help="continue the run in --run-dir")
    add_input_options(overfit)
    for flag, variant in ABLATION_FLAGS.items():  # one per variant of `arctic-swe ablate`
        overfit.add_argument(flag, action="store_true", help=f"ablation: {variant.meaning}")
    return overfit


def add_config_options(parser: argparse.ArgumentParser) -> None:
    """``--preset``, ``--config`` and ``--set`` (shared with ``arctic-swe ablate``)."""
    parser.add_argument(
        "--preset",
        default="tiny",
        help=(
            "configuration preset: tiny, tiny-http (its engines as 2 HTTP servers), long (tiny "
            "sizes, 360 updates) or paper (default: %(default)s)"
        ),
    )
    parser.add_argument("--config", default=None, help="TOML file on top of the preset")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="SECTION.FIELD=VALUE",
        help="override one config field (repeatable), e.g. --set trainer.lr=1e-4",
    )


def add_input_options(parser: argparse.ArgumentParser) -> None:
    """``--deck``, ``--policy``, ``--threads``, ``--warmstart-threads`` (shared with ablate)."""
    parser.add_argument(
        "--deck",
        default=DEFAULT_DECK,
        help="deck directory, built if absent (default: %(default)s)",
    )
    parser.add_argument(
        "--policy",
        default=DEFAULT_POLICY,
        help="warm-start checkpoint, trained if absent (default: %(default)s)",
    )
    parser.add_argument(
        "--threads",
        type=positive_int,
        default=1,
        help="torch CPU threads of the RL loop: the tiny policy's ops are too small to split, "
        "and the engine and trainer threads already run side by side (measured 1.3x faster "
        "than 2 on 2 cores) (default: %(default)s)",
    )
    parser.add_argument(
        "--warmstart-threads",
        type=positive_int,
        default=2,
        help="torch CPU threads of the warm start, when --policy has to be built; SFT "
        "batches are large enough to split (default: %(default)s)",
    )


def ablation_overrides(args: argparse.Namespace) -> list[str]:
    """The ``--set`` strings the chosen ablation flags stand for."""
    chosen: list[str] = []
    for flag, variant in ABLATION_FLAGS.items():
        if getattr(args, flag.lstrip("-").replace("-", "_"), False):
            chosen.extend(variant.overrides)
    return chosen


def resolve_config(args: argparse.Namespace) -> RunConfig:
    """Preset, then ``--config``, then ablation flags, then ``--set`` (last wins)."""
    from arctic_swe.config import apply_overrides

    return apply_overrides(base_config(args), [*ablation_overrides(args), *args.overrides])


def base_config(args: argparse.Namespace) -> RunConfig:
    """``--preset``, then ``--config`` on top (no flags, no ``--set``)."""
    from arctic_swe.config import load_toml, preset

    config = preset(args.preset)
    if args.config:
        config = load_toml(args.config, base=config)
    return config


def run(args: argparse.Namespace) -> int:
    run_dir, config = _open_run(args)  # bad config or run dir: fails before torch loads
    return _train(args, run_dir, config)


def _open_run(args: argparse.Namespace) -> tuple[RunDir, RunConfig]:
    """Resolve the config and create (or reopen) the run directory."""
    from arctic_swe.config import (
        RunConfig,
        RunConfigError,
        RunDirError,
        load_run_config,
        prepare_run_dir,
    )

    with user_errors(RunConfigError, RunDirError):
        if args.resume:
            if args.overrides or ablation_overrides(args) or args.config:
                raise RunConfigError("--resume", "a resumed run keeps its config.toml")
            run_dir = prepare_run_dir(args.run_dir, RunConfig(), resume=True)
            return run_dir, load_run_config(run_dir)
        config = resolve_config(args)
        return prepare_run_dir(args.run_dir, config, resume=False), config


def run_errors() -> tuple[type[Exception], ...]:
    """The typed input errors a stress-test run reports as one ``error:`` line and exit 2: a
    deck, policy, tokenizer, config or run directory it cannot use (imports torch)."""
    from arctic_swe.chat import ChatError
    from arctic_swe.config import RunConfigError, RunDirError
    from arctic_swe.deck import StoredDeckError
    from arctic_swe.metrics import MetricsError
    from arctic_swe.model import PolicyError
    from arctic_swe.orchestrator import SetupError
    from arctic_swe.warmstart import WarmStartError

    return (
        ChatError, StoredDeckError, MetricsError, PolicyError, RunConfigError, RunDirError,
        SetupError, WarmStartError,
    )  # fmt: skip


def run_failures() -> tuple[type[Exception], ...]:
    """The typed failures of the work itself (an engine, the trainer, a sandbox), reported
    as one ``error:`` line and exit 1 (imports torch)."""
    from arctic_swe.engine import EngineError
    from arctic_swe.trainer import TrainerError
    from swe_sandbox import SandboxError

    return EngineError, SandboxError, TrainerError


def prepare_inputs(
    args: argparse.Namespace,
    config: RunConfig,
    note: Console,
    on_stage: Callable[[str], None] = lambda stage: None,
) -> Inputs:
    """Build or reuse the deck (``--deck``) and the warm start (``--policy``) a run trains
    from, with ``--warmstart-threads``; leaves torch at ``--threads`` for the loop.
    ``on_stage`` hears where an interrupt would stop (for the resume hint)."""
    import torch

    from arctic_swe.config import PROCEDURAL_DECK
    from arctic_swe.orchestrator import Inputs, ensure_deck, ensure_policy

    torch.set_num_threads(args.warmstart_threads)
    deck_dir = Path(args.deck)
    # A file of task rows (deck.source) is the pool; the procedural deck is then only
    # needed to warm-start a policy that does not exist yet.
    if config.deck.source == PROCEDURAL_DECK or not (Path(args.policy) / "config.json").is_file():
        deck_dir = ensure_deck(deck_dir, config, note)
    on_stage("in the warm start (it resumes where it stopped)")
    policy_dir = ensure_policy(Path(args.policy), deck_dir, config, note)
    torch.set_num_threads(args.threads)
    return Inputs(deck_dir, policy_dir)


def _train(args: argparse.Namespace, run_dir: RunDir, config: RunConfig) -> int:
    """Build or reuse the deck and the warm start, then run the RL loop."""
    from arctic_swe.orchestrator import run_training

    note = console(stderr=True)
    stage = ["while building the deck"]
    with user_errors(*run_errors()), runtime_errors(*run_failures()):
        try:
            inputs = prepare_inputs(args, config, note, on_stage=lambda now: stage.append(now))
            stage.append("")
            result = run_training(config, run_dir, inputs, resume=args.resume, console=note)
        except KeyboardInterrupt:
            where = stage[-1] or _last_update(run_dir.metrics)
            raise CommandInterruptedError(
                f"{where}; resume with: {_resume_command(args)}"
            ) from None
    if result.records:
        from arctic_swe.metrics import summary_table

        summary = result.summary
        assert summary is not None  # records were written
        console().print(summary_table(summary))
        note.print(_verdict_line(summary))
    if result.end is not None and result.end.early:
        note.print(result.end.describe())
    for path in result.plots:
        note.print(f"plot: {path}")
    note.print(f"run directory: {run_dir.root}")
    # The curves are training-side figures; the policy itself is checked by sampling it: on
    # the check streams (disjoint from the run's own, so an independent measurement), and with
    # the run's seed, samples, workers and pool streams, which reproduces the final evaluation.
    run = config.run
    command = f"arctic-swe evaluate {inputs.policy_dir} {run_dir.root} --deck {inputs.deck_dir}"
    note.print(f"check the policy (independent streams): {command}")
    if run.pool_eval_every > 0:
        note.print(
            f"reproduce the run's final evaluation: {command} --seed {run.seed} --stream pool"
            f" --samples {run.pool_eval_samples} --workers {run.pool_eval_workers}"
            f" --threads {args.threads}"
        )
    return 0


def _verdict_line(summary: RunSummary) -> str:
    """The verdict in one sentence, saying which figures it reads and by which rule."""
    verdict = summary.verdict
    if not verdict.measured:
        return (
            f"verdict: not measured ({verdict.reason}); the eviction-adjusted reward imputes "
            "1.0 to retired tasks, so it cannot tell a held pool from a collapse"
        )
    return (
        f"verdict: {verdict.label} — pool success, update 0 → final {verdict.climb_text()}; "
        f"reference → final {verdict.hold_text()}; rule: {verdict.rule.describe()}"
    )


def _last_update(metrics: Path) -> str:
    from arctic_swe.metrics import MetricsLog

    records = MetricsLog(metrics).read() if metrics.is_file() else []
    return f"at update {records[-1].step}" if records else "before the first update"


def _resume_command(args: argparse.Namespace) -> str:
    import shlex

    argv = ["arctic-swe", "overfit", "--resume", "--run-dir", args.run_dir]
    if args.deck != DEFAULT_DECK:
        argv += ["--deck", args.deck]
    if args.policy != DEFAULT_POLICY:
        argv += ["--policy", args.policy]
    return shlex.join(argv)
