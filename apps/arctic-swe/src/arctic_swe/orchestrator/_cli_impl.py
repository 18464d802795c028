"""Handlers behind ``arctic-swe overfit`` / ``compare`` (heavy imports load only here)."""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from rich.console import Console

from arctic_swe.config import (
    RunConfig,
    RunConfigError,
    RunDirError,
    apply_overrides,
    load_run_config,
    load_toml,
    prepare_run_dir,
    preset,
)
from arctic_swe.metrics import MetricsError, MetricsLog, plot_compare, summarize, summary_table
from arctic_swe.orchestrator._commands import ablation_overrides
from arctic_swe.orchestrator._inputs import ensure_deck, ensure_policy
from arctic_swe.orchestrator._overfit import run_overfit
from arctic_swe.orchestrator._setup import Inputs, SetupError
from arctic_swe.trainer import TrainerError


def resolve_config(args: argparse.Namespace) -> RunConfig:
    """Preset, then ``--config``, then ablation flags, then ``--set`` (last wins)."""
    config = preset(args.preset)
    if args.config:
        config = load_toml(args.config, base=config)
    return apply_overrides(config, [*ablation_overrides(args), *args.overrides])


def overfit_command(args: argparse.Namespace) -> int:
    console = Console(stderr=True)
    try:
        if args.resume:
            run = prepare_run_dir(args.run_dir, RunConfig(), resume=True)
            config = load_run_config(run)
            if args.overrides or ablation_overrides(args) or args.config:
                raise RunConfigError("--resume", "a resumed run keeps its config.toml")
        else:
            config = resolve_config(args)
            run = prepare_run_dir(args.run_dir, config, resume=False)
        torch.set_num_threads(args.warmstart_threads)
        deck_dir = ensure_deck(Path(args.deck), config, console)
        policy_dir = ensure_policy(Path(args.policy), deck_dir, config, console)
        torch.set_num_threads(args.threads)
        result = run_overfit(
            config, run, Inputs(deck_dir, policy_dir), resume=args.resume, console=console
        )
    except (RunConfigError, RunDirError, SetupError, TrainerError, MetricsError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        return 2
    if result.summary is not None:
        Console().print(summary_table(result.summary))
    for path in result.plots:
        console.print(f"plot: {path}")
    console.print(f"run directory: {run.root}")
    # The curves are training-side figures; the policy itself is checked by sampling it.
    console.print(
        f"check the policy: arctic-swe evaluate {policy_dir} {run.root} --deck {deck_dir}"
    )
    return 0


def compare_command(args: argparse.Namespace) -> int:
    console = Console()
    runs = {}
    try:
        for name in args.runs:
            path = Path(name) / "metrics.jsonl"
            if not path.is_file():
                raise MetricsError(f"{name} has no metrics.jsonl")
            records = MetricsLog(path).read()
            if not records:
                raise MetricsError(f"{name} has no updates yet")
            runs[Path(name).name or name] = records
    except MetricsError as exc:
        Console(stderr=True).print(f"[red]error:[/red] {exc}")
        return 2
    for label, records in runs.items():
        console.print(summary_table(summarize(records), title=label))
    for path in plot_compare(runs, Path(args.out)):
        console.print(f"plot: {path}")
    return 0
