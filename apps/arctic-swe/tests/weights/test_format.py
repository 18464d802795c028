"""Tests for ``arctic_swe.weights._format``: one directory per published version (the layout
vLLM's reload reads, plus the manifest), the one atomic file writer, pruning."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from arctic_swe.weights import (
    FORMAT,
    MANIFEST_FILE,
    WEIGHTS_FILE,
    file_digest,
    prune,
    publish,
    published_dir,
    run_weights,
    weights_file,
    write_safetensors,
)


def test_a_version_is_a_directory_with_one_safetensors_file_and_no_leftovers(
    tmp_path: Path,
) -> None:
    weights = {"a.weight": torch.arange(6.0).reshape(2, 3), "b.bias": torch.ones(3)}
    directory = publish(weights, tmp_path, 7)
    assert directory == published_dir(tmp_path, 7) == tmp_path / "policy-v7"
    assert run_weights(tmp_path) == tmp_path / "weights"  # a run's root of the versions
    assert sorted(p.name for p in directory.iterdir()) == [MANIFEST_FILE, WEIGHTS_FILE]
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


def test_the_manifest_names_the_version_every_tensor_and_the_file_digest(tmp_path: Path) -> None:
    weights = {"a.weight": torch.arange(6.0).reshape(2, 3), "b.h": torch.ones(3).half()}
    directory = publish(weights, tmp_path, 4)
    manifest = json.loads((directory / MANIFEST_FILE).read_text())
    file = directory / WEIGHTS_FILE
    assert manifest["format"] == FORMAT
    assert (manifest["version"], manifest["file"]) == (4, WEIGHTS_FILE)
    assert manifest["bytes"] == file.stat().st_size
    assert manifest["sha256"] == file_digest(file) == hashlib.sha256(file.read_bytes()).hexdigest()
    assert manifest["tensors"] == {
        "a.weight": {"dtype": "F32", "shape": [2, 3]},
        "b.h": {"dtype": "F16", "shape": [3]},
    }


def test_the_file_writer_is_atomic_copies_shared_memory_and_drops_tied_aliases(
    tmp_path: Path,
) -> None:
    base = torch.arange(8.0)
    target = tmp_path / "w.safetensors"
    write_safetensors({"x": base[:4], "y": base[4:]}, target)  # two views of one storage
    loaded = load_file(str(target))
    assert torch.equal(loaded["x"], base[:4])
    assert torch.equal(loaded["y"], base[4:])
    assert oct(target.stat().st_mode & 0o777) != oct(0o600)  # not mkstemp's private mode
    module = torch.nn.Embedding(4, 2)
    tied = torch.nn.Module()
    tied.embed, tied.head = module, torch.nn.Linear(2, 4, bias=False)
    tied.head.weight = module.weight
    write_safetensors(tied, target)
    assert set(load_file(str(target))) == {"embed.weight"}

    class WriteFailedError(RuntimeError):
        pass

    def fail(*_: object, **__: object) -> None:
        raise WriteFailedError

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("arctic_swe.weights._format.save_file", fail)
        with pytest.raises(WriteFailedError):
            write_safetensors({"z": torch.zeros(1)}, target)
    assert set(load_file(str(target))) == {"embed.weight"}  # the previous file, whole
    assert [p.name for p in tmp_path.iterdir()] == ["w.safetensors"]  # no staging left


def test_weights_file_of_a_plain_file_is_the_file(tmp_path: Path) -> None:
    path = tmp_path / "w.safetensors"
    assert weights_file(path) == path
