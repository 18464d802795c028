"""Weight files of the checkpoint-format transport: a file is checked against the served model
by name set, shape and dtype from its header before anything is read; a plain ``state_dict()``
(tied ``lm_head.weight`` included) is accepted; writes are atomic."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from arctic_swe.model import assign_weights
from arctic_swe.serve import (
    WeightFileError,
    load_weight_file,
    save_weight_file,
    tied_spec,
    weight_spec,
)

from .conftest import perturbed_state, tiny_policy


@pytest.fixture(scope="module")
def model() -> torch.nn.Module:
    return tiny_policy()


def test_the_tied_head_is_an_alias_not_a_required_name(model: torch.nn.Module) -> None:
    assert "lm_head.weight" in tied_spec(model)
    assert "lm_head.weight" not in weight_spec(model)
    assert set(weight_spec(model)) | set(tied_spec(model)) == set(model.state_dict())


def test_a_saved_module_loads_back_bit_for_bit_and_fits_assign_weights(
    model: torch.nn.Module, tmp_path: Path
) -> None:
    path = save_weight_file(model, tmp_path / "w.safetensors")
    loaded = load_weight_file(path, weight_spec(model), tied_spec(model))
    assert set(loaded) == set(weight_spec(model))
    state = model.state_dict()
    assert all(torch.equal(loaded[name], state[name]) for name in loaded)
    assign_weights(tiny_policy(seed=1), loaded)  # the engine's refresh accepts it as is
    assert not list(tmp_path.glob(".w.safetensors.*"))  # no staging file left behind


def test_a_full_state_dict_with_the_tied_head_is_accepted_and_the_alias_dropped(
    model: torch.nn.Module, tmp_path: Path
) -> None:
    state = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    path = save_weight_file(state, tmp_path / "full.safetensors")
    loaded = load_weight_file(path, weight_spec(model), tied_spec(model))
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
    path = save_weight_file(state, tmp_path / "bad.safetensors")
    with pytest.raises(WeightFileError, match=words):
        load_weight_file(path, weight_spec(model), tied_spec(model))


def test_unreadable_or_absent_files_are_weight_file_errors(
    model: torch.nn.Module, tmp_path: Path
) -> None:
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"\x07" * 100)
    with pytest.raises(WeightFileError, match="cannot read"):
        load_weight_file(junk, weight_spec(model))
    with pytest.raises(WeightFileError, match="not found"):
        load_weight_file(tmp_path / "absent.safetensors", weight_spec(model))
    (tmp_path / "empty").mkdir()
    with pytest.raises(WeightFileError, match=r"no \*\.safetensors"):
        load_weight_file(tmp_path / "empty", weight_spec(model))
