"""Tests for ``arctic_swe.model._quiet``: the conv-fallback notice is dropped where the project's
numerics are installed, and nothing else is."""

import logging
import subprocess
import sys

import pytest

from arctic_swe.model._quiet import (
    KERNELS_LOGGER,
    ConvFallbackNoticeFilter,
    silence_conv_fallback_notice,
)

FORWARD = """
import torch
from arctic_swe.model import PolicyPreset, build_policy, policy_config
preset = PolicyPreset(hidden_size=32, intermediate_size=64, head_dim=16, linear_key_head_dim=16,
                      linear_value_head_dim=16)
model = build_policy(policy_config(40, preset), seed=0, patch_numerics={patch})
with torch.no_grad():
    model(input_ids=torch.tensor([[1, 2, 3, 4]]))
print("ran")
"""


def _stderr_of_a_forward(patch: bool) -> str:
    done = subprocess.run(
        [sys.executable, "-c", FORWARD.format(patch=patch)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert done.stdout.strip() == "ran"
    return done.stderr


@pytest.mark.slow
def test_the_notice_shows_on_the_stock_model_and_not_with_the_project_numerics() -> None:
    assert "falling back" in _stderr_of_a_forward(patch=False)  # what the filter is for
    assert "falling back" not in _stderr_of_a_forward(patch=True)


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_only_the_conv_fallback_record_is_dropped() -> None:
    silence_conv_fallback_notice()
    silence_conv_fallback_notice()  # idempotent: one filter
    logger = logging.getLogger(KERNELS_LOGGER)
    assert sum(isinstance(f, ConvFallbackNoticeFilter) for f in logger.filters) == 1
    collect = _Collect()
    logger.addHandler(collect)
    try:
        logger.warning("`causal_conv1d_fn` is falling back to its reference implementation")
        logger.warning("`fla` is falling back to its reference implementation")
        logger.warning("causal_conv1d: some other problem")
    finally:
        logger.removeHandler(collect)
    assert collect.messages == [
        "`fla` is falling back to its reference implementation",
        "causal_conv1d: some other problem",
    ]
