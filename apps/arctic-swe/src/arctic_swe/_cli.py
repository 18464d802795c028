"""The ``arctic-swe`` command line.

Sub-commands are added as the application issues land (#10: deck, warmstart, rollout; #11:
overfit, compare). Today it reports which Arctic-SWE components are installed and at which version,
which is what a user checks first when composing the pieces into their own RL stack.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

from arctic_swe._version import __version__

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


def component_versions() -> dict[str, str | None]:
    """Map each component distribution to its installed version (``None`` when absent)."""
    found: dict[str, str | None] = {}
    for name in COMPONENTS:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="arctic-swe",
        description=(
            "Arctic-SWE: fully asynchronous RL of long-horizon software-engineering agents. "
            "The embedded overfitting stress test (`arctic-swe overfit`) lands with issue #11."
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.add_parser(
        "components",
        help="list the Arctic-SWE packages this application composes and their installed versions",
        description="Print one line per component: distribution name and installed version.",
    )
    return parser


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
    parser.print_help()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
