"""Tests for ``arctic_swe.model._init`` and ``_layout``: ``model init`` writes a checkpoint every
loader takes; incomplete, foreign or full (vision-language) layouts are handled as documented."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from arctic_swe.chat import IM_END, TEMPLATES, chat_format, load_tokenizer, special_id
from arctic_swe.cli._model import PRESET_NAMES, TEMPLATE_NAMES
from arctic_swe.harness import TOOLS
from arctic_swe.model import (
    PRESETS,
    CheckpointError,
    PolicyConfigError,
    check_checkpoint,
    init_checkpoint,
    load_policy,
    read_weights,
)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return init_checkpoint(tmp_path_factory.mktemp("init") / "tiny-qwen35", seed=3)


def test_init_writes_the_hub_layout(checkpoint: Path) -> None:
    assert sorted(p.name for p in checkpoint.iterdir()) == [
        "config.json",
        "generation_config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
    ]
    config = json.loads((checkpoint / "config.json").read_text())
    assert config["model_type"] == "qwen3_5_text"
    assert (
        json.loads((checkpoint / "tokenizer_config.json").read_text())["chat_template"]
        == (TEMPLATES["qwen3.5"])
    )
    generation = json.loads((checkpoint / "generation_config.json").read_text())
    tokenizer = load_tokenizer(checkpoint)
    assert generation["eos_token_id"][0] == special_id(tokenizer, IM_END) == config["eos_token_id"]
    assert check_checkpoint(checkpoint) == checkpoint


def test_the_checkpoint_loads_as_policy_tokenizer_and_chat_format(checkpoint: Path) -> None:
    model = load_policy(checkpoint)
    tokenizer = load_tokenizer(checkpoint)
    assert len(tokenizer) <= model.config.vocab_size
    fmt = chat_format(tokenizer, TOOLS)
    assert (fmt.dialect, fmt.think_prefilled) == ("qwen3_coder", True)
    ids = torch.tensor([fmt.prompt_ids("system", "fix the bug")])
    with torch.no_grad():
        logits = model(input_ids=ids).logits
    assert logits.shape == (1, ids.shape[1], model.config.vocab_size)
    assert torch.isfinite(logits).all()


def test_init_is_seeded(checkpoint: Path, tmp_path: Path) -> None:
    again = init_checkpoint(tmp_path / "again", seed=3)
    other = init_checkpoint(tmp_path / "other", seed=4, template="arctic")
    same, first, second = read_weights(checkpoint), read_weights(again), read_weights(other)
    assert all(torch.equal(same[k], first[k]) for k in same)
    assert not torch.equal(same["model.embed_tokens.weight"], second["model.embed_tokens.weight"])
    assert (tmp_path / "again" / "tokenizer.json").read_text() == (
        checkpoint / "tokenizer.json"
    ).read_text()
    assert chat_format(load_tokenizer(other), TOOLS).think_prefilled is False


def test_init_refuses_to_overwrite_unless_forced(checkpoint: Path, tmp_path: Path) -> None:
    target = tmp_path / "busy"
    target.mkdir()
    (target / "keep.txt").write_text("data")
    with pytest.raises(CheckpointError, match="not empty"):
        init_checkpoint(target)
    assert (target / "keep.txt").read_text() == "data"  # nothing lost
    init_checkpoint(target, force=True)
    assert not (target / "keep.txt").exists()
    check_checkpoint(target)
    with pytest.raises(PolicyConfigError, match="unknown preset"):
        init_checkpoint(tmp_path / "x", preset="huge")
    with pytest.raises(CheckpointError, match="unknown chat template"):
        init_checkpoint(tmp_path / "x", template="llama")
    assert not (tmp_path / "x").exists()


def test_cli_choices_match_the_registries() -> None:
    assert set(PRESET_NAMES) == set(PRESETS)
    assert set(TEMPLATE_NAMES) == set(TEMPLATES)


@pytest.mark.parametrize(
    ("remove", "edit", "message"),
    [
        ("tokenizer.json", None, "no tokenizer.json"),
        ("model.safetensors", None, r"no \*.safetensors weights"),
        ("config.json", None, "no config.json"),
        (None, ("config.json", "model_type", "llama"), "holds a 'llama' model"),
        (None, ("tokenizer_config.json", "chat_template", None), "no chat template"),
    ],
)
def test_incomplete_or_foreign_directories_are_one_line_errors(
    checkpoint: Path,
    tmp_path: Path,
    remove: str | None,
    edit: tuple[str, str, str | None] | None,
    message: str,
) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(checkpoint, broken)
    if remove is not None:
        (broken / remove).unlink()
    if edit is not None:
        file, key, value = edit
        data = json.loads((broken / file).read_text())
        data[key] = value
        (broken / file).write_text(json.dumps(data))
    with pytest.raises(CheckpointError, match=message) as info:
        check_checkpoint(broken)
    assert "\n" not in str(info.value)
    assert str(broken) in str(info.value)


def test_a_full_qwen35_checkpoint_loads_its_language_model(
    checkpoint: Path, tmp_path: Path
) -> None:
    """The hub's vision-language layout: ``qwen3_5`` + ``text_config``, prefixed weights."""
    full = tmp_path / "full"
    full.mkdir()
    text = json.loads((checkpoint / "config.json").read_text())
    config = {"model_type": "qwen3_5", "text_config": text, "vision_config": {"depth": 1}}
    (full / "config.json").write_text(json.dumps(config))
    weights = read_weights(checkpoint)
    renamed = {
        name.replace("model.", "model.language_model.", 1): tensor
        for name, tensor in weights.items()
    }
    renamed["model.visual.patch_embed.weight"] = torch.zeros(2, 2)  # left out by the loader
    save_file(renamed, str(full / "model.safetensors"))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(checkpoint / name, full / name)
    check_checkpoint(full)
    loaded = load_policy(full, patch_numerics=False).state_dict()
    for name, tensor in weights.items():
        assert torch.equal(loaded[name], tensor), name


def test_the_layout_check_imports_no_torch(checkpoint: Path, tmp_path: Path) -> None:
    """A launcher checks checkpoints before loading anything heavy."""
    code = (
        "import sys; from arctic_swe._hf_layout import checkpoint_problem as p; "
        f"print(p({str(checkpoint)!r}), '|', p({str(tmp_path)!r}), '|', "
        "'torch' in sys.modules or 'transformers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    ok, missing, heavy = (part.strip() for part in out.stdout.split("|"))
    assert ok == "None"
    assert missing.startswith(f"{tmp_path} is not a usable Qwen3.5 checkpoint: no config.json")
    assert heavy == "False"
