"""``arctic-swe deck import``: dataset rows -> checked tasks -> a deck the loop trains on."""

from __future__ import annotations

import argparse
from pathlib import Path

from arctic_swe._argtypes import Subparsers, positive_int
from arctic_swe._backends import SANDBOX_BACKENDS, sandbox_backend
from arctic_swe._execute import runtime_errors, user_errors
from arctic_swe.cli._checks import require_directories, require_file, require_writable_directory
from arctic_swe.cli._output import console

FORMATS = ("auto", "native", "swebench", "swerebench", "r2egym")


def add_import_parser(actions: Subparsers) -> None:
    """Register ``deck import`` under ``deck``."""
    imp = actions.add_parser(
        "import",
        help="import SWE-bench / SWE-rebench / R2E-Gym rows as a deck of real tasks",
        description="Parse each row of ROWS (.jsonl, .json or .parquet), give it its "
        "environment image, check it (the base commit exists, the test patch applies; with "
        "--validate audit, Pipeline 1 runs it in its environment on --backend) and write "
        "DIR/deck.json, DIR/tasks.jsonl (the admitted tasks) and DIR/import.jsonl (one record "
        "per row). A bad row is reported with its reason; the other rows are unaffected. "
        "Exit 0 when every row became a task, 1 when some did not.",
    )
    imp.add_argument("rows", help="the task rows: .jsonl, .json or .parquet")
    imp.add_argument("--out", required=True, help="deck directory to write (its files replaced)")
    imp.add_argument(
        "--format",
        default="auto",
        choices=FORMATS,
        help="row schema; auto guesses it per row from the fields present (default: %(default)s)",
    )
    imp.add_argument(
        "--repo-dir",
        default=None,
        metavar="DIR",
        help="take each row's repository from a local git checkout instead of the image the "
        "dataset names: DIR is one checkout, or a folder of them named owner__name, "
        "owner/name or name; the row's base commit must exist in it",
    )
    imp.add_argument(
        "--environment",
        default=None,
        metavar="IMAGE",
        help="Docker image the tasks run in (their interpreter and installed dependencies, "
        "e.g. from `swe-sandbox image build-env`) for rows that name none; on the namespace "
        "backend its exported root filesystem is used (default: the swe-sandbox base)",
    )
    imp.add_argument(
        "--build-env",
        action="store_true",
        help="build each row's environment image from the recipe it carries (SWE-rebench "
        "install_config: python, pinned pip_packages, reqs_path files read from the checkout at "
        "environment_setup_commit), once per distinct recipe, through swe-sandbox's "
        "build_env_image; a build failure is that row's verdict (environment_build_failed, "
        "naming the step); rows without a recipe get --environment",
    )
    imp.add_argument(
        "--backend",
        choices=SANDBOX_BACKENDS,
        metavar="NAME",
        default="namespace",
        help="sandbox backend of the Pipeline 1 audit, one of %(choices)s (default: %(default)s)",
    )
    imp.add_argument(
        "--validate",
        choices=("audit", "prepare", "none"),
        default="prepare",
        help="audit: Pipeline 1 (F2P fail on the buggy tree and pass on gold, stable over "
        "--reruns); prepare: base commit and test patch only, no sandbox; none: parse only "
        "(default: %(default)s)",
    )
    imp.add_argument(
        "--reruns",
        type=positive_int,
        default=2,
        help="Pipeline 1 runs per tree with --validate audit (default: %(default)s)",
    )


def run_import(args: argparse.Namespace) -> int:
    """Import the rows, print one line per row and the summary table."""
    require_file(args.rows, "ROWS")  # the paths first, before the heavy imports
    require_writable_directory(args.out, "the deck")
    if args.repo_dir is not None:
        require_directories([args.repo_dir], "--repo-dir")
    from rich.table import Table

    from arctic_swe._progress import stage_progress
    from arctic_swe.deck import ImportedTask, ImportOptions, StoredDeckError, import_deck
    from swe_curate import CurateError
    from swe_sandbox import SandboxError

    options = ImportOptions(
        fmt=args.format,
        repo_dir=Path(args.repo_dir) if args.repo_dir else None,
        environment=args.environment,
        validate=args.validate,
        reruns=args.reruns,
        build_env=args.build_env,
    )
    out = console()
    with user_errors(StoredDeckError, CurateError), runtime_errors(SandboxError):
        backend = sandbox_backend(args.backend) if args.validate == "audit" else None
        with stage_progress(console(stderr=True)) as progress:
            bar = progress.add_task("import", total=None, info="")

            def done(result: ImportedTask) -> None:
                progress.update(bar, advance=1, info=f"{result.instance_id} {result.verdict}")

            results = import_deck(args.rows, args.out, options, backend, on_task=done)
    table = Table(title=f"deck import — {args.out}")
    for column in ("row", "task", "verdict", "seconds", "reason"):
        table.add_column(column, justify="right" if column in ("row", "seconds") else "left")
    for result in results:
        style = "green" if result.admitted else "red"
        table.add_row(
            str(result.index + 1),
            result.instance_id,
            f"[{style}]{result.verdict}[/{style}]",
            f"{result.seconds:.1f}",
            result.reason[:160],
        )
    out.print(table)
    admitted = sum(result.admitted for result in results)
    out.print(f"{admitted} of {len(results)} row(s) admitted; deck written to {args.out}")
    return 0 if admitted == len(results) else 1
