"""The worker's weight files for engine refreshes (no torchrun needed)."""

from __future__ import annotations

from pathlib import Path

from arctic_swe.distributed._worker import _prune_weights


def test_weight_files_are_pruned_by_version_and_strays_are_left(tmp_path: Path) -> None:
    for version in (1, 2, 10, 3):
        (tmp_path / f"policy-v{version}.safetensors").write_bytes(b"")
    (tmp_path / "policy-vbackup.safetensors").write_bytes(b"")  # not a version: kept
    _prune_weights(tmp_path / "policy-v10.safetensors")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "policy-v10.safetensors",
        "policy-v3.safetensors",
        "policy-vbackup.safetensors",
    ]
