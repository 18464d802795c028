"""The launcher's check errors: one line each, raised before anything starts (Arctic-SWE §3.3)."""

from __future__ import annotations


class PreflightError(RuntimeError):
    """The cluster cannot start as configured; nothing was started."""


class RoleEnvironmentError(PreflightError):
    """A role's environment cannot run it: the message names the role, its interpreter and the
    command that makes it work (``role``, ``python``, ``fix``)."""

    def __init__(self, role: str, python: str, problem: str, fix: str) -> None:
        super().__init__(f"{role}: {python} {problem}; run instead: {fix}")
        self.role, self.python, self.fix = role, python, fix


class ContextLengthError(PreflightError):
    """``engines.max_model_len`` exceeds the checkpoint's ``max_position_embeddings``."""

    def __init__(self, max_model_len: int, positions: int, config_file: str) -> None:
        super().__init__(
            f"engines.max_model_len = {max_model_len} exceeds the checkpoint's "
            f"max_position_embeddings = {positions} ({config_file}); lower engines.max_model_len "
            "or set 0 (the checkpoint's)"
        )
        self.max_model_len, self.positions = max_model_len, positions


class ServedModelError(PreflightError):
    """An engine serves something other than what the launcher asked for (model name,
    ``max_model_len``, dtype); the message names the engine's URL (``url``)."""

    def __init__(self, url: str, message: str) -> None:
        super().__init__(f"engine {url}: {message}")
        self.url = url
