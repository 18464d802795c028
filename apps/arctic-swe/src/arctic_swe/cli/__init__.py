"""The ``arctic-swe`` sub-commands: one private module per command group, each exposing
``add_parser(subparsers)`` and ``run(args)``; :mod:`arctic_swe.cli._registry` lists them.

Nothing here imports torch, transformers or matplotlib at module level: building the parser
(``--help``, ``--version``, usage errors) must stay instant.
"""

from arctic_swe.cli._registry import COMMAND_MODULES, Command, commands, load_command

__all__ = ["COMMAND_MODULES", "Command", "commands", "load_command"]
