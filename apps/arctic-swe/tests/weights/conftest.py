"""A tiny tied-embedding policy for the weights tests (the engine tests' architecture)."""

from __future__ import annotations

import pytest
import torch

from arctic_swe.model import build_policy, policy_config

VOCAB = 64


def tiny_policy(seed: int = 0) -> torch.nn.Module:
    """A random-init tiny Qwen3.5 policy (tied embeddings: ``lm_head.weight`` is an alias)."""
    return build_policy(policy_config(VOCAB), seed)


@pytest.fixture(scope="module")
def model() -> torch.nn.Module:
    return tiny_policy()
