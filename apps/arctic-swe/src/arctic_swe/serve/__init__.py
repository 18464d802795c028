"""Engines as services: the app's torch engine behind vLLM 0.33's completion and RL routes
(``arctic-swe serve``), the weight routes (reload from a directory, vLLM's weight-transfer protocol over gloo), and the recipe's
``vllm serve`` command line (Arctic-SWE §3.3).

The command module is imported to build the CLI parser, so this package imports nothing heavy
up front: the server and protocol names load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from arctic_swe.serve._argv import ServeArgs
from arctic_swe.serve._vllm import VllmServeSpec, shell_line, vllm_command, vllm_environment

if TYPE_CHECKING:
    from arctic_swe.serve._app import create_app
    from arctic_swe.serve._protocol import (
        CompletionRequest,
        CompletionResponse,
        WeightVersionSpan,
        spans_from_versions,
    )
    from arctic_swe.serve._state import EngineServer
    from arctic_swe.serve._transfer import ProtocolError, WeightRoutes

_LAZY = {
    "create_app": "_app",
    "CompletionRequest": "_protocol",
    "CompletionResponse": "_protocol",
    "WeightVersionSpan": "_protocol",
    "spans_from_versions": "_protocol",
    "EngineServer": "_state",
    "ProtocolError": "_transfer",
    "WeightRoutes": "_transfer",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)


__all__ = [
    "CompletionRequest",
    "CompletionResponse",
    "EngineServer",
    "ProtocolError",
    "ServeArgs",
    "VllmServeSpec",
    "WeightRoutes",
    "WeightVersionSpan",
    "create_app",
    "shell_line",
    "spans_from_versions",
    "vllm_command",
    "vllm_environment",
]
