"""A tiny seeded policy shared by the trainer tests (vocabulary 64, the tiny preset's layers)."""

from __future__ import annotations

import pytest
from transformers import Qwen3_5ForCausalLM

from arctic_swe.model import policy_config
from arctic_swe.trainer import build_fp32_policy

VOCAB = 64


@pytest.fixture
def policy() -> Qwen3_5ForCausalLM:
    return build_fp32_policy(policy_config(VOCAB), seed=7)
