"""Where an interrupted warm start picks up: a staging directory beside the policy directory.

The warm start runs minutes (expert rollouts, the copy task, SFT); an interrupt or a crash must
not throw that away. While it runs, ``.<out>.partial/`` next to the output directory holds:

* ``settings.json``  what this warm start is (tasks, configs, seeds, vocabulary): a staging
  directory written for other settings is discarded, never mixed in;
* ``expert.jsonl``   each expert trajectory as it finishes (a resume runs only the rest);
* ``induction.pt`` / ``sft.pt``  the stage's state (weights, optimiser, schedule, random
  streams, the per-step record) every ``every`` steps and at the stage's end, written
  atomically, so a resume continues from the last saved step and reaches exactly the
  weights an uninterrupted run reaches.

The checkpoint itself is written last (atomically, by ``save_policy``); then the staging
directory is removed.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from arctic_swe._atomic import atomic_file
from arctic_swe.harness import Trajectory

SETTINGS_FILE = "settings.json"
EXPERT_PARTIAL = "expert.jsonl"


def staging_dir(out_dir: str | os.PathLike[str]) -> Path:
    """The staging directory of a warm start writing to ``out_dir``."""
    target = Path(out_dir)
    return target.parent / f".{target.name}.partial"


@dataclass(frozen=True)
class StageCheckpoint:
    """Saved state of one training stage: ``load`` what the last run saved, ``save`` anew
    (atomically) every ``every`` steps."""

    path: Path
    every: int = 25

    def load(self) -> dict[str, Any] | None:
        if not self.path.is_file():
            return None
        state: dict[str, Any] = torch.load(self.path, weights_only=False)
        return state

    def due(self, done: int, total: int) -> bool:
        """Whether to save after ``done`` of ``total`` steps."""
        return done == total or done % self.every == 0

    def save(self, state: Mapping[str, Any]) -> None:
        with atomic_file(self.path) as staging:
            torch.save(dict(state), staging)


class WarmStartStaging:
    """The staging directory of one warm start (see the module docstring)."""

    def __init__(self, out_dir: str | os.PathLike[str], settings: Mapping[str, Any]) -> None:
        self.root = staging_dir(out_dir)
        self.settings = json.loads(json.dumps(settings))  # as it reads back from disk
        self.resumed = self._reopen()

    def _reopen(self) -> bool:
        """Keep a staging directory written for the same settings; start a fresh one else."""
        saved = self.root / SETTINGS_FILE
        if saved.is_file():
            try:
                same = json.loads(saved.read_text()) == self.settings
            except (OSError, ValueError):
                same = False
            if same:
                return True
        shutil.rmtree(self.root, ignore_errors=True)
        self.root.mkdir(parents=True)
        (self.root / SETTINGS_FILE).write_text(json.dumps(self.settings, indent=1))
        return False

    def finished_expert(self) -> list[Trajectory]:
        """Expert trajectories a previous run finished (a torn last line is dropped)."""
        path = self.root / EXPERT_PARTIAL
        done: list[Trajectory] = []
        lines = path.read_text().splitlines() if path.is_file() else []
        for line in lines:
            try:
                done.append(Trajectory.from_json(line))
            except (ValueError, KeyError, TypeError):
                # Killed mid-write: keep the complete lines only, so appends stay readable.
                path.write_text("".join(t.to_json() + "\n" for t in done))
                break
        return done

    def record_expert(self, trajectory: Trajectory) -> None:
        with (self.root / EXPERT_PARTIAL).open("a") as handle:
            handle.write(trajectory.to_json() + "\n")
            handle.flush()

    def stage(self, name: str, every: int = 25) -> StageCheckpoint:
        return StageCheckpoint(self.root / f"{name}.pt", every)

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
