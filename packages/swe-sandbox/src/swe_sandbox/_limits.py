"""Resource limits shared by both backends (CPU / memory / pids / disk / wall time)."""

from __future__ import annotations

import attrs


@attrs.frozen(kw_only=True)
class Limits:
    """Per-sandbox resource limits.

    Attributes:
        cpus: CPU quota in cores (CFS quota; fractions allowed).
        memory_bytes: hard memory limit of every process in the sandbox together.
        pids: maximum number of processes/threads alive at once (stops fork bombs).
        disk_bytes: size of the writable workdir (a size-capped tmpfs).
        tmp_bytes: size of the sandbox's ``/tmp`` (a separate size-capped tmpfs).
        exec_timeout_s: default wall-time limit of one command.
        grade_timeout_s: wall-time limit of the graded test run.
        output_limit_bytes: tool output kept per command; the rest is dropped with a marker.
    """

    cpus: float = 1.0
    memory_bytes: int = 1 << 30
    pids: int = 256
    disk_bytes: int = 512 << 20
    tmp_bytes: int = 128 << 20
    exec_timeout_s: float = 60.0
    grade_timeout_s: float = 300.0
    output_limit_bytes: int = 64 << 10

    def __attrs_post_init__(self) -> None:
        for name in ("memory_bytes", "pids", "disk_bytes", "tmp_bytes", "output_limit_bytes"):
            if getattr(self, name) <= 0:
                raise ValueError(f"Limits.{name} must be positive, got {getattr(self, name)}")
        for name in ("cpus", "exec_timeout_s", "grade_timeout_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"Limits.{name} must be positive, got {getattr(self, name)}")
