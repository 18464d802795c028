"""The command line of one ``arctic-swe serve`` process, as every launcher writes it.

The embedded fleet (``engine.launch = N``) and ``arctic-swe cluster up`` start the same
server; both build its arguments here, so a flag is renamed in one place (next to its parser,
:mod:`arctic_swe.serve._command`). Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ServeArgs:
    """The flags of one torch ``arctic-swe serve`` child. ``None`` leaves a flag out (the
    server's default): ``served_model_name``, ``max_model_len`` (the checkpoint's limit) and
    ``state_dtype`` (``--mamba-ssm-cache-dtype``, float32)."""

    model: str | Path
    capacity: int
    threads: int
    engine_id: str
    host: str = "127.0.0.1"
    port: int = 0  # a free port, printed in the ready line
    served_model_name: str | None = None
    max_model_len: int | None = None
    state_dtype: str | None = None

    def argv(self) -> tuple[str, ...]:
        """``("serve", "--model", …)``: the subcommand and its flags, for ``arctic-swe`` (or
        an interpreter running the app's CLI) to be put in front of."""
        argv: tuple[str, ...] = (
            "serve", "--model", str(self.model), "--host", self.host, "--port", str(self.port),
            "--capacity", str(self.capacity), "--threads", str(self.threads),
            "--engine-id", self.engine_id,
        )  # fmt: skip
        if self.served_model_name is not None:
            argv += ("--served-model-name", self.served_model_name)
        if self.max_model_len is not None:
            argv += ("--max-model-len", str(self.max_model_len))
        if self.state_dtype is not None:
            argv += ("--mamba-ssm-cache-dtype", self.state_dtype)
        return argv
