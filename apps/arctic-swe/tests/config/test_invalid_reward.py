"""``trainer.invalid_reward``: 0.0 or -1.0 only, the paper preset's -1 (Arctic-SWE §5)."""

from __future__ import annotations

import pytest

from arctic_swe.config import RunConfig, RunConfigError, apply_overrides, preset


@pytest.mark.parametrize("value", ["0", "0.0", "-1", "-1.0"])
def test_zero_and_minus_one_are_accepted(value: str) -> None:
    config = apply_overrides(RunConfig(), [f"trainer.invalid_reward={value}"])
    assert config.trainer.invalid_reward == float(value)


@pytest.mark.parametrize("value", ["-0.5", "1", "-2", "0.1", "nan", '"minus one"', "true"])
def test_anything_else_is_refused_naming_the_key(value: str) -> None:
    with pytest.raises(RunConfigError) as caught:
        apply_overrides(RunConfig(), [f"trainer.invalid_reward={value}"])
    assert caught.value.key == "trainer.invalid_reward"
    assert str(caught.value).startswith("trainer.invalid_reward: ")


def test_presets_tiny_keeps_zero_and_paper_uses_the_final_recipe() -> None:
    assert preset("tiny").trainer.invalid_reward == 0.0
    assert preset("tiny-http").trainer.invalid_reward == 0.0
    assert preset("paper").trainer.invalid_reward == -1.0
