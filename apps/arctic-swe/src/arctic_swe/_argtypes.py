"""``argparse`` types shared by every ``arctic-swe`` sub-command: a bad count is a usage error
(exit 2) before any work starts, never silently clamped; and the shape of the sub-parsers a
command module registers itself with."""

from __future__ import annotations

import argparse
import math
from typing import Any, Protocol


class Subparsers(Protocol):
    """What ``ArgumentParser.add_subparsers()`` returns, as far as a command module needs it."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser: ...


def positive_int(text: str) -> int:
    """An integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def non_negative_int(text: str) -> int:
    """An integer >= 0."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {value}")
    return value


def positive_float(text: str) -> float:
    """A finite float > 0 (a learning rate, a timeout)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value
