"""Shared fixtures: a tiny random policy and its full-forward log-probs (the trainer's view)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import torch
from transformers import Qwen3_5ForCausalLM

from arctic_swe.model import build_policy, policy_config

VOCAB = 96


def tiny_model(seed: int = 0, vocab: int = VOCAB) -> Qwen3_5ForCausalLM:
    """A 4-layer hybrid policy (3 Gated DeltaNet + 1 attention) with hybrid-numerics installed
    (the trainer's numerics: its full forward is the reference). The final norm gain is raised
    so the next-token distribution is far from uniform (a random init is nearly flat, which
    would make distribution tests blind)."""
    model = build_policy(policy_config(vocab), seed)
    with torch.no_grad():
        model.model.norm.weight.fill_(4.0)
    return model


def perturbed(model: torch.nn.Module, seed: int, scale: float = 0.05) -> dict[str, torch.Tensor]:
    """A new set of weights: ``model``'s plus seeded noise (a stand-in for an optimizer step)."""
    generator = torch.Generator().manual_seed(seed)
    return {
        name: tensor + scale * tensor.abs().mean() * torch.randn(tensor.shape, generator=generator)
        for name, tensor in model.state_dict().items()
    }


@torch.no_grad()
def full_logprobs(model: torch.nn.Module, tokens: Sequence[int], start: int) -> torch.Tensor:
    """log p(tokens[t] | tokens[:t]) for t >= start from ONE full forward (float64 log-softmax),
    as the trainer scores a trajectory."""
    logits = model(torch.tensor([list(tokens)])).logits[0].double()
    logprobs = torch.log_softmax(logits, dim=-1)
    targets = torch.tensor(list(tokens[start:]))
    return logprobs[start - 1 : len(tokens) - 1].gather(1, targets[:, None])[:, 0]


@pytest.fixture(scope="module")
def model() -> Qwen3_5ForCausalLM:
    return tiny_model()
