"""``arctic-swe components``: the Arctic-SWE packages the app composes and their versions."""

from __future__ import annotations

import argparse
from importlib.metadata import PackageNotFoundError, version

from arctic_swe._argtypes import Subparsers
from arctic_swe.cli._defaults import COMPONENTS


def add_parser(subparsers: Subparsers) -> argparse.ArgumentParser:
    return subparsers.add_parser(
        "components",
        help="list the Arctic-SWE packages this application composes and their installed versions",
        description="Print one line per component: distribution name and installed version; "
        "exit 1 if one is missing.",
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


def run(args: argparse.Namespace) -> int:
    missing = 0
    for name, found in component_versions().items():
        print(f"{name:<16} {found or 'NOT INSTALLED'}")
        missing += found is None
    return 1 if missing else 0
