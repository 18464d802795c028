"""Typed errors: every bad input names the tensor (or config field) it came from."""

from __future__ import annotations


class CispoError(ValueError):
    """Base class of every error this package raises on bad input or configuration."""


class InputError(CispoError):
    """A tensor argument is malformed (shape, dtype, device, non-finite or out-of-range values).

    ``tensor`` holds the argument's name (``"rollout_logprobs"``, ``"cu_seqlens"``, …) so a caller
    can route the failure without parsing the message; the message starts with the same name.
    """

    def __init__(self, tensor: str, problem: str) -> None:
        super().__init__(f"{tensor}: {problem}")
        self.tensor = tensor
        self.problem = problem


class ConfigError(CispoError):
    """A configuration field holds an invalid value; ``field`` names it."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem
