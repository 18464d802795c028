"""The ``arctic-swe`` command line: a thin parser over the command modules that
:mod:`arctic_swe.cli._registry` lists; each command's work, and its heavy imports, live in its
own module's ``run``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from arctic_swe._execute import USAGE_EXIT, execute
from arctic_swe._version import __version__
from arctic_swe.cli import commands

DESCRIPTION = (
    "Arctic-SWE: fully asynchronous RL of long-horizon software-engineering agents. Typical "
    "flow on one CPU machine: `deck build`, then `warmstart`, then `rollout` to check the "
    "warm-started policy, then `overfit` (the overfitting stress test), `evaluate` (warm start "
    "vs trained policy) and `compare`. Every long command stops cleanly on Ctrl-C or SIGTERM "
    "(exit 130 / 143). Errors are one `arctic-swe: error:` line on stderr: exit 2 for a usage "
    "error (bad arguments, a missing or invalid input path or config file), exit 1 when the "
    "work itself failed."
)


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line, ``PROG: error: ...`` and where to
    look (sub-parsers are built with the parent's class, so every sub-command gets this)."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_EXIT, f"{self.prog}: error: {message} (see: {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The whole ``arctic-swe`` parser; each sub-parser's defaults carry its command's ``run``."""
    parser = Parser(prog="arctic-swe", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in commands():
        command.add_parser(subparsers).set_defaults(run=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``arctic-swe`` console script; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    return execute(args.run, args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
