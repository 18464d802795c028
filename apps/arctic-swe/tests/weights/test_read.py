"""Tests for ``arctic_swe.weights._read``, the one validating reader: a file is checked against
the served model by name set, shape and dtype from its header before anything is read; a plain
``state_dict()`` (tied ``lm_head.weight`` included) is accepted; a published version is checked
against its manifest (size, SHA-256, names, version); missing, junk, truncated and corrupt
files are :class:`WeightsError`; what it returns equals a slow by-hand safetensors parse."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
import torch

from arctic_swe.model import assign_weights
from arctic_swe.weights import (
    DTYPES,
    MANIFEST_FILE,
    WEIGHTS_FILE,
    WeightsError,
    owned_weights,
    publish,
    read_weights,
    tied_spec,
    weight_spec,
    write_safetensors,
)

from .conftest import tiny_policy


def perturbed_state(model: torch.nn.Module, seed: int) -> dict[str, torch.Tensor]:
    """``model``'s weights plus seeded noise, tied aliases left out."""
    generator = torch.Generator().manual_seed(seed)
    return {
        name: tensor + 0.05 * torch.randn(tensor.shape, generator=generator).to(tensor.dtype)
        for name, tensor in owned_weights(model).items()
    }


def test_a_saved_module_loads_back_bit_for_bit_and_fits_assign_weights(
    model: torch.nn.Module, tmp_path: Path
) -> None:
    path = write_safetensors(model, tmp_path / "w.safetensors")
    loaded = read_weights(path, spec=weight_spec(model), tied=tied_spec(model))
    assert set(loaded) == set(weight_spec(model))
    state = model.state_dict()
    assert all(torch.equal(loaded[name], state[name]) for name in loaded)
    assign_weights(tiny_policy(seed=1), loaded)  # the engine's refresh accepts it as is
    assert not list(tmp_path.glob(".w.safetensors.*"))  # no staging file left behind


def test_a_full_state_dict_with_the_tied_head_is_accepted_and_the_alias_dropped(
    model: torch.nn.Module, tmp_path: Path
) -> None:
    state = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    path = write_safetensors(state, tmp_path / "full.safetensors")
    loaded = read_weights(path, spec=weight_spec(model), tied=tied_spec(model))
    assert "lm_head.weight" not in loaded
    assert set(loaded) == set(weight_spec(model))


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ("shape", "shape"),
        ("dtype", "dtype"),
        ("drop", "missing"),
        ("extra", "not in the served model"),
        ("head_shape", "lm_head.weight: shape"),
    ],
)
def test_a_file_that_does_not_fit_is_refused_naming_the_offender(
    model: torch.nn.Module, tmp_path: Path, change: str, words: str
) -> None:
    state = perturbed_state(model, seed=4)
    name = "model.layers.3.self_attn.q_proj.weight"
    if change == "shape":
        state[name] = state[name][:, :-1].contiguous()
    elif change == "dtype":
        state[name] = state[name].half()
    elif change == "drop":
        del state[name]
    elif change == "extra":
        state["model.layers.3.self_attn.q_proj.bias"] = torch.zeros(3)
    else:
        state["lm_head.weight"] = torch.zeros(2, 2)
    path = write_safetensors(state, tmp_path / "bad.safetensors")
    with pytest.raises(WeightsError, match=words):
        read_weights(path, spec=weight_spec(model), tied=tied_spec(model))


def test_unreadable_or_absent_files_are_weight_file_errors(
    model: torch.nn.Module, tmp_path: Path
) -> None:
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"\x07" * 100)
    with pytest.raises(WeightsError, match="cannot read"):
        read_weights(junk, spec=weight_spec(model))
    with pytest.raises(WeightsError, match="not found"):
        read_weights(tmp_path / "absent.safetensors", spec=weight_spec(model))
    (tmp_path / "empty").mkdir()
    with pytest.raises(WeightsError, match=r"no \*\.safetensors"):
        read_weights(tmp_path / "empty", spec=weight_spec(model))


# ---------------------------------------------------------------- a slow, readable reference
def reference_read(file: Path) -> dict[str, torch.Tensor]:
    """The safetensors format by hand: an 8-byte little-endian header length, a JSON header
    (name -> dtype, shape, [begin, end) in the data), then the data."""
    raw = file.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + length])
    data = raw[8 + length :]
    out: dict[str, torch.Tensor] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        flat = torch.frombuffer(bytearray(data[begin:end]), dtype=DTYPES[entry["dtype"]])
        out[name] = flat.reshape(entry["shape"])
    return out


def test_the_reader_equals_a_by_hand_parse_of_a_published_version(
    model: torch.nn.Module, tmp_path: Path
) -> None:
    state = perturbed_state(model, seed=2)
    state["model.norm.weight"] = state["model.norm.weight"].to(torch.bfloat16)  # mixed dtypes
    directory = publish(state, tmp_path, 3)
    read = read_weights(directory, version=3)
    slow = reference_read(directory / WEIGHTS_FILE)
    assert read.keys() == slow.keys() == state.keys()
    for name, tensor in slow.items():
        assert read[name].dtype == tensor.dtype == state[name].dtype
        assert torch.equal(read[name], tensor)
        assert torch.equal(read[name], state[name])


def _published(model: torch.nn.Module, root: Path) -> Path:
    return publish(owned_weights(model), root, 5)


def test_a_truncated_file_is_refused(model: torch.nn.Module, tmp_path: Path) -> None:
    directory = _published(model, tmp_path)
    file = directory / WEIGHTS_FILE
    file.write_bytes(file.read_bytes()[:-100])
    with pytest.raises(WeightsError):
        read_weights(directory)
    (directory / MANIFEST_FILE).unlink()  # without the manifest the header still catches it
    with pytest.raises(WeightsError, match="cannot read"):
        read_weights(directory)


def test_a_flipped_byte_is_caught_by_the_manifest_digest(
    model: torch.nn.Module, tmp_path: Path
) -> None:
    directory = _published(model, tmp_path)
    file = directory / WEIGHTS_FILE
    raw = bytearray(file.read_bytes())
    raw[-5] ^= 0xFF  # inside the last tensor's data: the header still parses
    file.write_bytes(bytes(raw))
    with pytest.raises(WeightsError, match="SHA-256"):
        read_weights(directory)


def test_a_swapped_file_or_a_wrong_version_is_refused(
    model: torch.nn.Module, tmp_path: Path
) -> None:
    directory = _published(model, tmp_path / "a")
    with pytest.raises(WeightsError, match="holds version 5, not 6"):
        read_weights(directory, version=6)
    other = publish({"x": torch.zeros(2)}, tmp_path / "b", 5)
    (directory / WEIGHTS_FILE).write_bytes((other / WEIGHTS_FILE).read_bytes())
    with pytest.raises(WeightsError, match="bytes, the manifest says"):
        read_weights(directory)


def test_a_corrupt_manifest_is_refused_and_a_directory_without_one_is_still_read(
    model: torch.nn.Module, tmp_path: Path
) -> None:
    directory = _published(model, tmp_path)
    manifest = directory / MANIFEST_FILE
    manifest.write_text("{not json")
    with pytest.raises(WeightsError, match="cannot read"):
        read_weights(directory)
    manifest.write_text(json.dumps({"format": "other"}))
    with pytest.raises(WeightsError, match="not an arctic-swe-weights manifest"):
        read_weights(directory)
    manifest.unlink()  # the layout published before the manifest existed
    assert read_weights(directory, spec=weight_spec(model)).keys() == weight_spec(model).keys()
