"""``arctic-swe report``: a results folder's tables and plots regenerated from its committed
data, ``--collect`` to copy that data from finished runs, ``--check`` to prove a committed page
is what its data gives (Arctic-SWE §3.1)."""

from __future__ import annotations

import argparse
from pathlib import Path

from arctic_swe._argtypes import Subparsers
from arctic_swe._execute import CommandError, runtime_errors, user_errors
from arctic_swe.cli._output import console


def add_parser(subparsers: Subparsers) -> argparse.ArgumentParser:
    report = subparsers.add_parser(
        "report",
        help="regenerate a results folder's tables and plots from its committed data",
        description="Read RESULTS/data (the compact raw data of the reported runs: config, "
        "metrics.jsonl.gz, evaluations.jsonl.gz, how each ended) and regenerate every results "
        "table (comparison, training health, paired with full, mechanisms, each variant against full) between the "
        "generated-content markers of RESULTS/README.md, and the plots RESULTS/figures/*.png. With --collect, "
        "first replace RESULTS/data with the data of an ablation directory or of run "
        "directories (never checkpoints or weights; machine paths redacted), or with --add "
        "add them to it.",
    )
    report.add_argument("results", metavar="RESULTS", help="the results folder")
    report.add_argument(
        "--collect",
        action="append",
        default=[],
        metavar="SOURCE",
        help="an `arctic-swe ablate` directory, or a run directory (repeatable), whose compact "
        "data replaces RESULTS/data before the page is regenerated",
    )
    report.add_argument(
        "--add",
        action="store_true",
        help="with --collect: keep the runs RESULTS/data holds and add these after them (a "
        "measurement collected sitting by sitting; a run already there is refused); "
        "SOURCE.json keeps one record per collection",
    )
    report.add_argument(
        "--label",
        dest="labels",
        action="append",
        default=[],
        metavar="NAME",
        help="with --collect of run directories: label of the next run, in order (default: a "
        "unique path suffix; an ablation's runs keep their variant names)",
    )
    report.add_argument(
        "--command",
        default="",
        metavar="TEXT",
        help="with --collect: the command that produced the runs, kept in RESULTS/data/"
        "SOURCE.json (default: not recorded)",
    )
    report.add_argument(
        "--note",
        default="",
        metavar="TEXT",
        help="with --collect: conditions of the runs (machine, load), kept in SOURCE.json",
    )
    report.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 when RESULTS/README.md is not what RESULTS/data "
        "regenerates (or a figure it shows is missing)",
    )
    return report


def run(args: argparse.Namespace) -> int:
    collecting = bool(args.collect)
    if args.check and collecting:
        raise CommandError("--check reads the committed data: it cannot be combined with --collect")
    if not collecting and (args.labels or args.command or args.note or args.add):
        raise CommandError("--add, --label, --command and --note only apply with --collect")
    from arctic_swe.report import (
        ReportError,
        ReportOutOfDateError,
        check_report,
        collect,
        write_report,
    )

    results, note = Path(args.results), console(stderr=True)
    with user_errors(ReportError), runtime_errors(ReportOutOfDateError):
        if args.check:
            report = check_report(results)
            note.print(f"{report.readme}: up to date with {results / 'data'}")
            return 0
        if collecting:
            collected = collect(
                [Path(source) for source in args.collect],
                results,
                labels=args.labels,
                command=args.command,
                note=args.note,
                add=args.add,
            )
            for label, size in collected.runs.items():
                note.print(f"collected {label}: {size:,} bytes", highlight=False)
            note.print(f"data: {collected.data} ({collected.total:,} bytes)", highlight=False)
        report = write_report(results)
    note.print(f"page: {report.readme}")
    for path in report.figures:
        note.print(f"plot: {path}")
    return 0
