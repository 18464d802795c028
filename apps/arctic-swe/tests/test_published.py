"""Published policy versions: one directory per version, the layout vLLM's reload reads."""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors.torch import load_file

from arctic_swe._published import (
    WEIGHTS_FILE,
    prune,
    publish,
    published_dir,
    weights_file,
)


def test_a_version_is_a_directory_with_one_safetensors_file_and_no_leftovers(
    tmp_path: Path,
) -> None:
    weights = {"a.weight": torch.arange(6.0).reshape(2, 3), "b.bias": torch.ones(3)}
    directory = publish(weights, tmp_path, 7)
    assert directory == published_dir(tmp_path, 7) == tmp_path / "policy-v7"
    assert [p.name for p in directory.iterdir()] == [WEIGHTS_FILE]
    assert [p.name for p in tmp_path.iterdir()] == ["policy-v7"]  # no staging left
    loaded = load_file(str(weights_file(directory)))
    assert loaded.keys() == weights.keys()
    assert all(torch.equal(loaded[k], weights[k]) for k in weights)
    # republishing a version (a resumed run) replaces it whole
    publish({"a.weight": torch.zeros(1)}, tmp_path, 7)
    assert load_file(str(directory / WEIGHTS_FILE)).keys() == {"a.weight"}


def test_versions_are_ordered_by_number_and_pruned_but_never_the_current_one(
    tmp_path: Path,
) -> None:
    for version in (1, 2, 10, 3):
        publish({"w": torch.zeros(1)}, tmp_path, version)
    (tmp_path / "policy-vbackup").mkdir()  # not a version: ignored and kept
    (tmp_path / "policy-v4.safetensors").write_bytes(b"")  # a file, not a version: kept
    (tmp_path / ".policy-v11.crashed").mkdir()  # staging a crash left behind: removed
    prune(tmp_path, keep=2, current=published_dir(tmp_path, 10))
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "policy-v10",
        "policy-v3",
        "policy-v4.safetensors",
        "policy-vbackup",
    ]
    prune(tmp_path, keep=0, current=published_dir(tmp_path, 3))
    assert sorted(p.name for p in tmp_path.glob("policy-v*") if p.is_dir()) == [
        "policy-v3",
        "policy-vbackup",
    ]


def test_weights_file_of_a_plain_file_is_the_file(tmp_path: Path) -> None:
    path = tmp_path / "w.safetensors"
    assert weights_file(path) == path
