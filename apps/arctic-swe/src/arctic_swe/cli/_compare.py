"""``arctic-swe compare``: overlay the curves of several runs and summarise each.

:func:`read_runs` and :func:`write_comparison` are the reusable parts: ``arctic-swe ablate``
compares its variants through them.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from arctic_swe._argtypes import Subparsers, positive_int
from arctic_swe._execute import CommandError, user_errors
from arctic_swe.cli._checks import require_run_metrics
from arctic_swe.cli._output import console

if TYPE_CHECKING:
    from rich.console import Console

    from arctic_swe.metrics import (
        ComparisonRow,
        EvalRecord,
        RunHealth,
        UpdateMetrics,
        VerdictRule,
    )


def add_parser(subparsers: Subparsers) -> argparse.ArgumentParser:
    compare = subparsers.add_parser(
        "compare",
        help="plot several runs against each other",
        description="Overlay the curves of RUN directories and print one summary per run. "
        "Runs are labelled by the shortest path suffix that tells them apart, or by --label.",
    )
    compare.add_argument(
        "runs", nargs="+", metavar="RUN", help="run directories (each with metrics.jsonl)"
    )
    compare.add_argument(
        "--out", default=".", help="where to write the comparison PNGs (default: %(default)s)"
    )
    compare.add_argument(
        "--label",
        dest="labels",
        action="append",
        default=[],
        metavar="NAME",
        help="label of the next RUN, in order (repeatable; default: a unique path suffix)",
    )
    compare.add_argument(
        "--windows",
        type=positive_int,
        default=0,
        metavar="N",
        help="also print each run cut into blocks of N updates: endings invalid or out of "
        "budget, zero-gradient updates and the trained reward per block (default: off)",
    )
    return compare


def read_runs(runs: Sequence[Path], labels: Sequence[str] = ()) -> dict[str, list[UpdateMetrics]]:
    """label -> the run's metrics (old logs read back with the later fields' defaults).

    Raises :class:`CommandError` for a run without ``metrics.jsonl`` or without updates.
    """
    from arctic_swe.metrics import MetricsError, MetricsLog, run_labels

    found = {}
    with user_errors(MetricsError):
        for label, run in zip(run_labels(runs, labels), runs, strict=True):
            log = MetricsLog(Path(run) / "metrics.jsonl")
            if not log.path.is_file():
                raise CommandError(f"{run} has no metrics.jsonl")
            records = log.read()
            if not records:
                raise CommandError(f"{run} has no updates yet")
            found[label] = records
    return found


def read_evaluations(
    runs: Sequence[Path], labels: Sequence[str] = ()
) -> dict[str, list[EvalRecord]]:
    """label -> the run's evaluations (``RUN/evaluations.jsonl``; empty for a run that predates
    it). Raises :class:`CommandError` for a corrupt file."""
    from arctic_swe.metrics import EVALUATIONS, EvaluationLog, MetricsError, run_labels

    with user_errors(MetricsError):
        return {
            label: EvaluationLog(Path(run) / EVALUATIONS).read()
            for label, run in zip(run_labels(runs, labels), runs, strict=True)
        }


def read_verdict_rules(
    runs: Sequence[Path], labels: Sequence[str] = ()
) -> dict[str, VerdictRule | None]:
    """label -> the verdict rule the run's ``config.toml`` declared (its ``[verdict]`` section
    over its length; ``None`` for a run without one). Raises :class:`CommandError` for a bad
    config or end record."""
    from arctic_swe.config import RunConfigError, RunDirError
    from arctic_swe.metrics import read_verdict_rule, run_labels

    with user_errors(RunConfigError, RunDirError):
        return {
            label: read_verdict_rule(Path(run))
            for label, run in zip(run_labels(runs, labels), runs, strict=True)
        }


def write_comparison(
    runs: Mapping[str, list[UpdateMetrics]],
    out: Path,
    evaluations: Mapping[str, Sequence[EvalRecord]] | None = None,
    rules: Mapping[str, VerdictRule | None] | None = None,
) -> tuple[list[ComparisonRow], list[Path]]:
    """One comparison row per run (with its evaluations and its verdict rule, when given), and
    the overlay PNGs written into ``out``."""
    from arctic_swe.metrics import comparison_row, plot_compare

    evals, declared = evaluations or {}, rules or {}
    rows = [
        comparison_row(label, records, evals.get(label, ()), declared.get(label))
        for label, records in runs.items()
    ]
    return rows, plot_compare(dict(runs), out)


def health_rows(runs: Mapping[str, list[UpdateMetrics]]) -> list[RunHealth]:
    """One training-health row per run (endings, zero-gradient updates, defenses, audit)."""
    from arctic_swe.metrics import run_health

    return [run_health(label, records) for label, records in runs.items()]


def run(args: argparse.Namespace) -> int:
    require_run_metrics(args.runs)  # before the plotting stack loads
    from arctic_swe.metrics import (
        comparison_table,
        ending_windows,
        health_table,
        summary_table,
        windows_table,
    )

    runs = read_runs([Path(name) for name in args.runs], args.labels)
    dirs = [Path(name) for name in args.runs]
    evaluations = read_evaluations(dirs, args.labels)
    rules = read_verdict_rules(dirs, args.labels)
    out = console()
    rows, plots = write_comparison(runs, Path(args.out), evaluations, rules)
    for row, name in zip(rows, args.runs, strict=True):
        out.print(summary_table(row.summary, title=row.label))
        _print_early_end(out, Path(name))
        if args.windows:
            blocks = ending_windows(runs[row.label], args.windows)
            out.print(windows_table(blocks, title=f"{row.label}: blocks of {args.windows}"))
    # side by side: the measured pool success where a run logged it ("not measured" otherwise)
    out.print(comparison_table(rows, title="runs"))
    out.print(health_table(health_rows(runs), title="training health"))
    out.print(inputs_line([Path(name) for name in args.runs]), highlight=False)
    for path in plots:
        out.print(f"plot: {path}")
    return 0


def inputs_line(runs: Sequence[Path]) -> str:
    """Whether the runs started from the same deck and warm start (``RUN/inputs.json``):
    only then do their differences come from their configurations alone."""
    from arctic_swe.config import RunDir, RunDirError, inputs_summary, read_run_inputs

    with user_errors(RunDirError):
        return inputs_summary({str(run): read_run_inputs(RunDir(run)) for run in runs})


def _print_early_end(out: Console, run: Path) -> None:
    """Say so when a run stopped before ``run.updates`` on its own (its curve ends there)."""
    from arctic_swe.config import RunDir, RunDirError, read_run_end

    with user_errors(RunDirError):
        end = read_run_end(RunDir(run))
    if end is not None and end.early:
        out.print(f"{run}: {end.describe()}")
