"""The run directory: layout, writability check and the saved config (ARCHITECTURE.md §4).

Layout::

    RUN/config.toml          the resolved configuration (what ``--resume`` reads back)
    RUN/metrics.jsonl        one JSON object per update
    RUN/evaluations.jsonl    every pool and held-out evaluation, rollout by rollout
    RUN/plots/*.png          curves (matplotlib, Agg)
    RUN/checkpoints/step-N/  atomic checkpoints (see arctic_swe.trainer)
    RUN/finished.json        how the loop stopped, once it has (see ``_run_end``)
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import attrs

from arctic_swe._atomic import atomic_write_text
from arctic_swe.config._errors import RunDirError
from arctic_swe.config._load import load_toml, to_toml
from arctic_swe.config._schema import RunConfig

CONFIG_FILE = "config.toml"


@attrs.frozen
class RunDir:
    """Paths of one run directory."""

    root: Path

    @property
    def config(self) -> Path:
        return self.root / CONFIG_FILE

    @property
    def metrics(self) -> Path:
        return self.root / "metrics.jsonl"

    @property
    def evaluations(self) -> Path:
        return self.root / "evaluations.jsonl"

    @property
    def plots(self) -> Path:
        return self.root / "plots"

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"


def prepare_run_dir(path: str | os.PathLike[str], config: RunConfig, *, resume: bool) -> RunDir:
    """Create (or, with ``resume``, reopen) a run directory and prove it is writable.

    A fresh run refuses a directory that already holds a run (``config.toml``), so nothing is
    overwritten by accident; ``resume`` requires one. Raises :class:`RunDirError` before any
    work starts.
    """
    run = RunDir(Path(path))
    if resume and not run.config.is_file():  # before mkdir: a typo must not leave a directory
        raise RunDirError(f"nothing to resume: {run.config} does not exist")
    try:
        run.root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunDirError(f"cannot create run directory {run.root}: {exc}") from exc
    if not run.root.is_dir():
        raise RunDirError(f"{run.root} is not a directory")
    _probe_writable(run.root)
    if resume:
        return run
    if run.config.exists():
        raise RunDirError(f"{run.root} already holds a run; pass --resume or pick a new --run-dir")
    atomic_write_text(run.config, to_toml(config), fsync=True)
    run.plots.mkdir(exist_ok=True)
    run.checkpoints.mkdir(exist_ok=True)
    return run


def load_run_config(run: RunDir) -> RunConfig:
    """The configuration a run was started with (for ``--resume``)."""
    return load_toml(run.config)


def _probe_writable(root: Path) -> None:
    try:
        with tempfile.NamedTemporaryFile(dir=root, prefix=".probe-"):
            pass
    except OSError as exc:
        raise RunDirError(f"run directory {root} is not writable: {exc}") from exc
