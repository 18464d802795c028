"""Which modules make up the ``arctic-swe`` command line.

To add a command, write a module exposing ``add_parser(subparsers) -> ArgumentParser`` and
``run(args) -> int`` and add its dotted name to :data:`COMMAND_MODULES` (one line). Such a
module, and its package's ``__init__``, must import nothing heavy at module level: every
listed module is imported to build the parser, and ``--help`` has to stay instant.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from dataclasses import dataclass

from arctic_swe._argtypes import Subparsers

#: The sub-command modules, in ``--help`` order.
COMMAND_MODULES: tuple[str, ...] = (
    "arctic_swe.cli._components",
    "arctic_swe.cli._deck",
    "arctic_swe.cli._model",
    "arctic_swe.cli._warmstart",
    "arctic_swe.cli._rollout",
    "arctic_swe.cli._overfit",
    "arctic_swe.cli._evaluate",
    "arctic_swe.cli._compare",
    "arctic_swe.cli._ablate",
    "arctic_swe.cli._report",
    "arctic_swe.serve._command",
    "arctic_swe.cli._cluster",
    "arctic_swe.cli._train_worker",
)


@dataclass(frozen=True)
class Command:
    """One command module: ``add_parser`` registers its sub-parser, ``run`` executes it."""

    module: str
    add_parser: Callable[[Subparsers], argparse.ArgumentParser]
    run: Callable[[argparse.Namespace], int]


def load_command(module_name: str) -> Command:
    """Import ``module_name`` and check that it exposes ``add_parser`` and ``run``."""
    module = importlib.import_module(module_name)
    add_parser, run = getattr(module, "add_parser", None), getattr(module, "run", None)
    if not callable(add_parser) or not callable(run):
        raise TypeError(f"{module_name} must define add_parser(subparsers) and run(args)")
    return Command(module_name, add_parser, run)


def commands() -> tuple[Command, ...]:
    """Every registered command, in ``--help`` order."""
    return tuple(load_command(name) for name in COMMAND_MODULES)
