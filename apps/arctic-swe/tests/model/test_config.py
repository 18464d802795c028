"""The tiny preset and the Qwen3.5 config it produces."""

from __future__ import annotations

import pytest
from transformers import Qwen3_5TextConfig

from arctic_swe.model import TINY_PRESET, PolicyConfigError, PolicyPreset, policy_config


def test_tiny_preset_has_both_token_mixers_in_the_qwen3_5_pattern() -> None:
    config = policy_config(512)
    assert isinstance(config, Qwen3_5TextConfig)
    assert config.layer_types == ["linear_attention"] * 3 + ["full_attention"]
    assert config.num_hidden_layers == 4
    assert config.vocab_size == 512
    assert 128 <= config.hidden_size <= 256
    assert config.rope_parameters["partial_rotary_factor"] == TINY_PRESET.partial_rotary_factor


def test_overrides_and_special_ids_reach_the_config() -> None:
    config = policy_config(100, pad_token_id=0, eos_token_id=[1, 2], tie_word_embeddings=False)
    assert config.pad_token_id == 0
    assert config.eos_token_id == [1, 2]
    assert config.tie_word_embeddings is False


@pytest.mark.parametrize("vocab", [0, 1, -5, 2.5, True, "64"])
def test_bad_vocabulary_is_rejected(vocab: object) -> None:
    with pytest.raises(PolicyConfigError, match="vocab_size"):
        policy_config(vocab)  # type: ignore[arg-type]


def test_special_ids_outside_the_vocabulary_are_rejected() -> None:
    with pytest.raises(PolicyConfigError, match="eos_token_id 70"):
        policy_config(64, eos_token_id=[3, 70])
    with pytest.raises(PolicyConfigError, match="pad_token_id"):
        policy_config(64, pad_token_id=64)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"hidden_size": 0}, "hidden_size must be positive"),
        ({"layer_types": ()}, "layer_types"),
        ({"layer_types": ("mamba",)}, "layer_types"),
        ({"num_attention_heads": 3}, "multiple of num_key_value_heads"),
        ({"linear_num_value_heads": 3}, "multiple of linear_num_key_heads"),
        ({"partial_rotary_factor": 0.1}, "even"),
    ],
)
def test_bad_presets_are_rejected(changes: dict[str, object], message: str) -> None:
    with pytest.raises(PolicyConfigError, match=message):
        PolicyPreset(**changes)  # type: ignore[arg-type]


def test_unknown_override_is_a_policy_config_error() -> None:
    with pytest.raises(PolicyConfigError, match=r"invalid Qwen3\.5 config"):
        policy_config(64, hidden_act=17)
