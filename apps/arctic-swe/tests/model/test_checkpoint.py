"""Local Hugging Face checkpoints: round trips, atomic replacement, validated weight loads."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch

from arctic_swe.model import (
    CheckpointError,
    assign_weights,
    build_policy,
    load_policy,
    policy_config,
    read_weights,
    save_policy,
)
from arctic_swe.model._checkpoint import ALIGNMENT, own_aligned_storage


def _logits(model: torch.nn.Module, tokens: list[int]) -> torch.Tensor:
    with torch.no_grad():
        out: torch.Tensor = model(torch.tensor([tokens])).logits
    return out


@pytest.mark.parametrize("tied", [True, False])
def test_save_then_load_reproduces_the_model(tmp_path: Path, tied: bool) -> None:
    model = build_policy(policy_config(80, tie_word_embeddings=tied), 1, patch_numerics=False)
    path = save_policy(model, tmp_path / "ckpt")
    assert (path / "config.json").is_file()
    assert list(path.glob("*.safetensors"))
    loaded = load_policy(path, patch_numerics=False)
    assert loaded.config.layer_types == model.config.layer_types
    tokens = [3, 1, 4, 1, 5, 9, 2, 6]
    assert torch.equal(_logits(model, tokens), _logits(loaded, tokens))


def test_saving_over_an_existing_checkpoint_replaces_it_whole(tmp_path: Path) -> None:
    first = build_policy(policy_config(64), 1, patch_numerics=False)
    second = build_policy(policy_config(64), 2, patch_numerics=False)
    save_policy(first, tmp_path / "ckpt")
    save_policy(second, tmp_path / "ckpt")
    assert torch.equal(
        _logits(load_policy(tmp_path / "ckpt", patch_numerics=False), [1, 2]),
        _logits(second, [1, 2]),
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]  # no staging left behind


def test_missing_or_foreign_checkpoints_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="not found"):
        load_policy(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointError, match=r"no config\.json"):
        load_policy(tmp_path / "empty")
    foreign = tmp_path / "llama"
    foreign.mkdir()
    (foreign / "config.json").write_text(json.dumps({"model_type": "llama"}))
    with pytest.raises(CheckpointError, match=r"not a Qwen3\.5 text model"):
        load_policy(foreign)
    (foreign / "config.json").write_text("{broken")
    with pytest.raises(CheckpointError, match="unreadable"):
        load_policy(foreign)


def test_read_weights_accepts_a_directory_or_a_file_and_rejects_garbage(tmp_path: Path) -> None:
    model = build_policy(policy_config(64), 0, patch_numerics=False)
    path = save_policy(model, tmp_path / "ckpt")
    from_dir = read_weights(path)
    from_file = read_weights(next(path.glob("*.safetensors")))
    assert from_dir.keys() == from_file.keys()
    assert "model.embed_tokens.weight" in from_dir
    with pytest.raises(CheckpointError, match="not found"):
        read_weights(tmp_path / "missing.safetensors")
    (tmp_path / "junk.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(CheckpointError, match="cannot read"):
        read_weights(tmp_path / "junk.safetensors")
    (tmp_path / "bare").mkdir()
    with pytest.raises(CheckpointError, match=r"no \*\.safetensors"):
        read_weights(tmp_path / "bare")


def test_assign_weights_copies_in_place_and_keeps_each_dtype() -> None:
    target = build_policy(policy_config(64), 0, patch_numerics=False)
    source = build_policy(policy_config(64), 1, patch_numerics=False)
    embed = target.model.embed_tokens.weight
    assign_weights(target, {k: v.double() for k, v in source.state_dict().items()})
    assert target.model.embed_tokens.weight is embed  # in place: engines keep their references
    assert embed.dtype == torch.float32
    assert torch.equal(_logits(target, [5, 6, 7]), _logits(source, [5, 6, 7]))


def test_bad_weights_change_nothing() -> None:
    model = build_policy(policy_config(64), 0, patch_numerics=False)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    good = build_policy(policy_config(64), 1, patch_numerics=False).state_dict()
    wrong_shape = dict(good) | {"model.norm.weight": torch.zeros(7)}
    with pytest.raises(CheckpointError, match="shape"):
        assign_weights(model, wrong_shape)
    with pytest.raises(CheckpointError, match="not in the model"):
        assign_weights(model, dict(good) | {"model.extra": torch.zeros(1)})
    partial = {k: v for k, v in good.items() if k != "model.norm.weight"}
    with pytest.raises(CheckpointError, match="missing"):
        assign_weights(model, partial)
    integer = dict(good) | {"model.norm.weight": torch.zeros(128, dtype=torch.int64)}
    with pytest.raises(CheckpointError, match="floating point"):
        assign_weights(model, integer)
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


def _aligned(model: torch.nn.Module) -> bool:
    tensors = [*model.parameters(), *model.buffers()]
    return all(t.data_ptr() % ALIGNMENT == 0 for t in tensors)


@pytest.mark.parametrize("tied", [True, False])
def test_a_loaded_policy_owns_aligned_storage_and_computes_as_its_copy(
    tmp_path: Path, tied: bool
) -> None:
    """from_pretrained leaves views into the file's bytes; load_policy moves them so that the
    trainer's model and its deep-copied engines take the same kernels (bit-equal logits)."""
    model = build_policy(policy_config(80, tie_word_embeddings=tied), 1, patch_numerics=False)
    loaded = load_policy(save_policy(model, tmp_path / "ckpt"), patch_numerics=False)
    assert _aligned(loaded)
    embed, head = loaded.get_input_embeddings().weight, loaded.get_output_embeddings().weight
    assert (embed is head) == tied  # moving the storage kept the tie
    tokens = [3, 1, 4, 1, 5, 9, 2, 6]
    assert torch.equal(_logits(loaded, tokens), _logits(copy.deepcopy(loaded), tokens))


def test_own_aligned_storage_moves_only_misaligned_tensors() -> None:
    model = torch.nn.Linear(16, 16)
    model.register_buffer("scale", torch.ones(16))
    base = torch.arange(16 * 16 + 1, dtype=torch.float32)
    with torch.no_grad():
        model.weight.data = base[1:].view(16, 16)  # 4 bytes past an aligned start
    assert model.weight.data_ptr() % ALIGNMENT == 4
    before = {name: t.clone() for name, t in model.state_dict().items()}
    assert own_aligned_storage(model) == 1  # the weight; bias and buffer were aligned
    assert _aligned(model)
    after = model.state_dict()
    assert all(torch.equal(before[name], after[name]) for name in before)
    assert own_aligned_storage(model) == 0


def test_a_shared_misaligned_buffer_is_moved_once_and_stays_shared() -> None:
    shared = torch.arange(17, dtype=torch.float32)[1:]  # 4 bytes past an aligned start
    model = torch.nn.Sequential(torch.nn.Identity(), torch.nn.Identity())
    for child in model:
        child.register_buffer("table", shared)
    assert own_aligned_storage(model) == 1
    first, second = (child.table for child in model)
    assert first is second
    assert first.data_ptr() % ALIGNMENT == 0
    assert torch.equal(first, shared)
