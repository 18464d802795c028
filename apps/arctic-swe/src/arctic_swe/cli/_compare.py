"""``arctic-swe compare``: overlay the curves of several runs and summarise each."""

from __future__ import annotations

import argparse
from pathlib import Path

from arctic_swe.cli._execute import CommandError, user_errors
from arctic_swe.cli._output import console
from arctic_swe.cli._registry import Subparsers


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
    return compare


def run(args: argparse.Namespace) -> int:
    from arctic_swe.metrics import (
        MetricsError,
        MetricsLog,
        compare_table,
        plot_compare,
        run_labels,
        summarize,
        summary_table,
    )

    runs = {}
    with user_errors(MetricsError):
        labels = run_labels([Path(name) for name in args.runs], args.labels)
        for label, name in zip(labels, args.runs, strict=True):
            path = Path(name) / "metrics.jsonl"
            if not path.is_file():
                raise CommandError(f"{name} has no metrics.jsonl")
            records = MetricsLog(path).read()
            if not records:
                raise CommandError(f"{name} has no updates yet")
            runs[label] = records
    out = console()
    summaries = {label: summarize(records) for label, records in runs.items()}
    for label, summary in summaries.items():
        out.print(summary_table(summary, title=label))
    # side by side: the measured pool success where a run logged it ("—" for older runs)
    out.print(compare_table(summaries))
    for path in plot_compare(runs, Path(args.out)):
        out.print(f"plot: {path}")
    return 0
