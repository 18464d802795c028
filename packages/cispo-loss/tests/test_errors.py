"""Error types carry the offending name and stay ValueErrors."""

from __future__ import annotations

from cispo_loss import CispoError, ConfigError, InputError


def test_input_error_names_the_tensor() -> None:
    error = InputError("rollout_logprobs", "holds 2 value(s) > 0")
    assert isinstance(error, CispoError)
    assert isinstance(error, ValueError)
    assert error.tensor == "rollout_logprobs"
    assert error.problem == "holds 2 value(s) > 0"
    assert str(error) == "rollout_logprobs: holds 2 value(s) > 0"


def test_config_error_names_the_field() -> None:
    error = ConfigError("mask_high", "must exceed mask_low")
    assert isinstance(error, ValueError)
    assert error.field == "mask_high"
    assert str(error).startswith("mask_high: ")
