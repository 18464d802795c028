"""``arctic-swe ablate``: the overfitting stress test for the full recipe and named broken
variants, one after the other, then one comparison table and plot (Arctic-SWE §3.1)."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from arctic_swe._argtypes import Subparsers
from arctic_swe._execute import CommandInterruptedError, runtime_errors, user_errors
from arctic_swe.ablate import DEFAULT_VARIANTS, VARIANTS
from arctic_swe.cli._output import console
from arctic_swe.cli._overfit import add_config_options, add_input_options

if TYPE_CHECKING:
    from rich.console import Console

    from arctic_swe.ablate import AblationPlan, VariantEvent
    from arctic_swe.config import RunConfig
    from arctic_swe.orchestrator import Inputs

DEFAULT_OUT = "runs/ablate"
COMPARISON = "comparison.md"


def _variant_lines() -> str:
    return "; ".join(f"{v.name} ({v.flag or 'no flag'}: {v.meaning})" for v in VARIANTS.values())


def add_parser(subparsers: Subparsers) -> argparse.ArgumentParser:
    ablate = subparsers.add_parser(
        "ablate",
        help="run the stress test for the full recipe and broken variants, then compare them",
        description="Run `arctic-swe overfit` once per variant, one after the other, from the "
        "same deck, warm start, seed and number of updates, each into OUT/<variant>/ (a normal "
        "run directory), then write one comparison table (printed, and OUT/comparison.md) and "
        "the overlay plots OUT/compare_*.png. The same command again skips finished variants "
        "and resumes an interrupted one. Variants: " + _variant_lines() + ". session-hash "
        "needs 2 engines: if the base config has 1, every variant runs on 2 so the budgets "
        "stay equal.",
    )
    ablate.add_argument(
        "--out",
        default=DEFAULT_OUT,
        help="ablation directory: OUT/ablation.json, OUT/<variant>/, OUT/comparison.md; a "
        "directory holding another ablation or anything else is refused (default: %(default)s)",
    )
    ablate.add_argument(
        "--variants",
        default=",".join(DEFAULT_VARIANTS),
        metavar="A,B,...",
        help=f"comma-separated variants, run in the order {', '.join(VARIANTS)} "
        "(default: %(default)s)",
    )
    ablate.add_argument(
        "--seeds",
        default="",
        metavar="N,M,...",
        help="run every variant once per seed (run.seed; the warm start keeps the base "
        "config's seed, so all seeds share it), each into OUT/<variant>/seed-<n>/; the paired "
        "table then gives each variant's per-seed difference to full with a t interval over "
        "seeds (default: one run per variant at the base seed, in OUT/<variant>/)",
    )
    ablate.add_argument(
        "--variant-seeds",
        action="append",
        default=[],
        metavar="VARIANT=N,M",
        help="run VARIANT at these seeds only (a subset of --seeds that full also runs, so "
        "every run has its paired full run), e.g. --variant-seeds ungated=0,1 for a positive "
        "control at two seeds beside four of full and no-eviction; repeatable",
    )
    ablate.add_argument(
        "--restore",
        default=None,
        metavar="RESULTS",
        help="before running, bring back the finished runs a results folder collected "
        "(`arctic-swe report RESULTS --collect`) that OUT does not hold: only a run with the "
        "same label, the config this ablation gives it and the same deck and warm-start "
        "digests; they are then skipped as finished. For a measurement spread over machines "
        "that keep no run directories (default: restore nothing)",
    )
    add_config_options(ablate)
    add_input_options(ablate)
    return ablate


def run(args: argparse.Namespace) -> int:
    plan, base = _plan(args)  # every bad input fails here, before torch loads or a deck is built
    note = console(stderr=True)
    from arctic_swe.cli._overfit import prepare_inputs, run_errors, run_failures

    where = ["while building the deck or the warm start"]
    with user_errors(*run_errors()), runtime_errors(*run_failures()):
        try:
            # the deck and the warm start read only run.seed and the deck section, which no
            # variant changes, and the base config's seed (not --seeds'): every variant and
            # every seed trains from the same two
            inputs = prepare_inputs(args, base, note)
            if args.restore is not None:
                _restore(plan, base, inputs, Path(args.restore), note)
            _run_variants(plan, inputs, note, where)
        except KeyboardInterrupt:
            raise CommandInterruptedError(
                f"{where[-1]}; resume with the same command: {_resume_command()}"
            ) from None
    _report(plan)
    return 0


def _restore(
    plan: AblationPlan, base: RunConfig, inputs: Inputs, results: Path, note: Console
) -> None:
    """The finished runs ``results`` collected, back into ``plan.out`` (``--restore``)."""
    from arctic_swe.config import fingerprint_inputs
    from arctic_swe.orchestrator import pool_source
    from arctic_swe.report import ReportError, restore_runs

    record = fingerprint_inputs(pool_source(base, inputs), inputs.policy_dir)
    with user_errors(ReportError):
        restored = restore_runs(results, plan.out, plan.configs, record)
    for label in restored:
        note.print(f"restored {label} from {results} (finished)", highlight=False)
    if not restored:
        note.print(f"nothing to restore from {results}", highlight=False)


def _run_variants(plan: AblationPlan, inputs: Inputs, note: Console, where: list[str]) -> None:
    """Every variant in turn under one progress bar (updates of all variants together)."""
    from arctic_swe._progress import stage_progress
    from arctic_swe.ablate import VariantState, run_ablation
    from arctic_swe.metrics import MetricsLog

    offsets, total = {}, 0  # updates of the variants before each one, on the shared bar
    for name, config in plan.configs.items():
        offsets[name], total = total, total + config.run.updates
    with stage_progress(note) as progress:
        bar = progress.add_task("ablate", total=total, info="")

        def seen(event: VariantEvent) -> None:
            if event.record is not None:
                step = event.record.step
            elif event.state is VariantState.DONE:
                step = plan.configs[event.variant].run.updates
            else:  # starting or resuming: the updates its log already holds
                step = len(MetricsLog(plan.run_dir(event.variant).metrics).read())
            if event.record is None:
                note.print(f"variant {event.variant}: {event.state.value}", highlight=False)
            where.append(f"in variant {event.variant} at update {step}")
            progress.update(bar, completed=offsets[event.variant] + step, info=event.variant)

        run_ablation(plan, inputs, console=note, on_event=seen)


def _report(plan: AblationPlan) -> None:
    """The comparison of every variant: the results tables (printed, and OUT/comparison.md;
    ``arctic-swe report`` builds a results page from the same list), the plots."""
    from arctic_swe.cli._compare import (
        inputs_line,
        read_evaluations,
        read_runs,
        read_verdict_rules,
        write_comparison,
    )
    from arctic_swe.report import result_sections, sections_markdown

    dirs = [plan.run_dir(v).root for v in plan.configs]
    labels = list(plan.configs)
    runs = read_runs(dirs, labels)
    rows, plots = write_comparison(
        runs, plan.out, read_evaluations(dirs, labels), read_verdict_rules(dirs, labels)
    )
    sections = result_sections(rows)
    out = console()
    out.print(f"arctic-swe ablate: {plan.out}", highlight=False)
    for section in sections:
        out.print(section.table)
    (plan.out / COMPARISON).write_text(sections_markdown(sections))
    out.print(inputs_line(dirs), highlight=False)
    note = console(stderr=True)
    note.print(f"table: {plan.out / COMPARISON}")
    for path in plots:
        note.print(f"plot: {path}")


def _resume_command() -> str:
    return shlex.join(["arctic-swe", *sys.argv[1:]])


def _plan(args: argparse.Namespace) -> tuple[AblationPlan, RunConfig]:
    """Variants (once per ``--seeds`` seed), their configs and the opened ``--out`` (manifest
    written or matched), and the base config (the preset, ``--config`` and ``--set``)."""
    from arctic_swe.ablate import (
        AblateError,
        AblationPlan,
        open_plan,
        parse_seeds,
        parse_variant_seeds,
        parse_variants,
        seeded_configs,
        variant_configs,
    )
    from arctic_swe.cli._overfit import base_config
    from arctic_swe.config import RunConfigError, apply_overrides

    with user_errors(AblateError, RunConfigError):
        variants = parse_variants(args.variants)
        seeds = parse_seeds(args.seeds) if args.seeds else ()
        own_seeds = parse_variant_seeds(args.variant_seeds, variants, seeds)
        preset_and_config = base_config(args)
        base = apply_overrides(preset_and_config, args.overrides)
        configs = seeded_configs(
            variant_configs(preset_and_config, variants, args.overrides), seeds, own_seeds
        )
        plan = AblationPlan(Path(args.out), configs, Path(args.deck), Path(args.policy))
        return open_plan(plan), base
