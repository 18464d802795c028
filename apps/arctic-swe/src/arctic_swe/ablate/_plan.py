"""The ablation directory: its manifest, one overfit run directory per variant, and which of
them are finished, interrupted or not started (what makes ``arctic-swe ablate`` resumable).

Layout::

    OUT/ablation.json      the variants, their resolved configs, the deck and the warm start
    OUT/<variant>/         a normal ``arctic-swe overfit`` run directory
    OUT/comparison.md      the comparison table (markdown), written at the end
    OUT/compare_*.png      the comparison plots
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from arctic_swe._atomic import atomic_write_text
from arctic_swe.ablate._errors import AblateError
from arctic_swe.config import (
    RunConfig,
    RunDir,
    RunDirError,
    load_run_config,
    read_run_end,
    to_mapping,
)

MANIFEST = "ablation.json"


class VariantState(Enum):
    """Where one variant's run directory stands."""

    NEW = "not started"
    PARTIAL = "interrupted"  # has config.toml, fewer updates than run.updates, no recorded end
    DONE = "finished"


@dataclass(frozen=True)
class AblationPlan:
    """What to run: ``configs`` maps each variant (in run order) to its configuration."""

    out: Path
    configs: Mapping[str, RunConfig]
    deck: Path
    policy: Path

    def run_dir(self, variant: str) -> RunDir:
        return RunDir(self.out / variant)

    def state(self, variant: str) -> VariantState:
        return variant_state(self.run_dir(variant), self.configs[variant])


def _manifest(plan: AblationPlan) -> dict[str, Any]:
    # through JSON once, so tuples compare equal to the lists read back
    data = {
        "variants": list(plan.configs),
        "configs": {name: to_mapping(config) for name, config in plan.configs.items()},
        "deck": str(plan.deck.resolve()),
        "policy": str(plan.policy.resolve()),
    }
    result: dict[str, Any] = json.loads(json.dumps(data))
    return result


def open_plan(plan: AblationPlan) -> AblationPlan:
    """Create ``plan.out`` with its manifest, or reopen it when its manifest is the same plan.

    Raises :class:`AblateError`, before anything runs, for an ``--out`` that is a file, holds
    something that is not an ablation, holds an ablation of other variants or settings, or is
    not writable.
    """
    out, wanted = plan.out, _manifest(plan)
    if out.exists() and not out.is_dir():
        raise AblateError(f"--out {out} is not a directory")
    manifest = out / MANIFEST
    if manifest.is_file():
        try:
            found = json.loads(manifest.read_text())
        except (OSError, ValueError) as exc:
            raise AblateError(f"{manifest} cannot be read: {exc}") from exc
        if found != wanted:
            raise AblateError(
                f"{out} holds an ablation with other {_difference(found, wanted)}; "
                "rerun it with its own options or pick a new --out"
            )
        return plan
    if out.is_dir() and any(out.iterdir()):
        raise AblateError(f"--out {out} is not empty and holds no {MANIFEST}; pick a new --out")
    try:
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(manifest, json.dumps(wanted, indent=2, sort_keys=True) + "\n", fsync=True)
    except OSError as exc:
        raise AblateError(f"cannot write {manifest}: {exc}") from exc
    return plan


def _difference(found: Any, wanted: dict[str, Any]) -> str:
    if not isinstance(found, dict):
        return "contents"
    if found.get("variants") != wanted["variants"]:
        return f"variants ({', '.join(map(str, found.get('variants') or []))})"
    for key in ("deck", "policy"):
        if found.get(key) != wanted[key]:
            return f"--{key} ({found.get(key)})"
    return "settings (preset, --config or --set)"


def variant_state(run: RunDir, config: RunConfig) -> VariantState:
    """``DONE`` once ``metrics.jsonl`` reaches ``run.updates`` or the loop recorded that it
    stopped at its last line (``finished.json``: the deck ran out of tasks), ``PARTIAL`` once the run
    directory holds a config (it is resumed with overfit's ``--resume``), else ``NEW``.

    A run directory whose saved config is not ``config`` is an :class:`AblateError` (the
    manifest matched, so someone edited the directory by hand)."""
    from arctic_swe.metrics import MetricsLog  # matplotlib: not at import (``--help``)

    if not run.config.is_file():
        return VariantState.NEW
    if load_run_config(run) != config:
        raise AblateError(f"{run.config} is not the config this ablation gives {run.root.name}")
    records = MetricsLog(run.metrics).read()
    if records and records[-1].step >= config.run.updates:
        return VariantState.DONE
    try:
        end = read_run_end(run)
    except RunDirError as exc:
        raise AblateError(str(exc)) from exc
    if records and end is not None and end.step == records[-1].step:
        return VariantState.DONE  # stopped early on its own (every pool task retired)
    return VariantState.PARTIAL
