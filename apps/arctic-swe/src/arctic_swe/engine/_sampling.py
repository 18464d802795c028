"""Full-vocabulary sampling at temperature 1.0, one RNG stream per sequence.

Training rollouts must be drawn from π itself: top-k / top-p / min-p truncate the distribution
and make the recorded log-prob disagree with the trainer's (Arctic-SWE §3.3), so there is no such
option here. Each sequence owns a ``torch.Generator``; a token is the Gumbel-max of the log-probs
(an exact sample of the categorical), so what a sequence samples depends only on its own seed
and logits — never on which other sequences happen to share the batch.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import torch


def derive_seed(base: int, counter: int) -> int:
    """A 63-bit seed for request number ``counter`` of an engine seeded with ``base``
    (a hash, so neighbouring requests get unrelated streams)."""
    digest = hashlib.blake2b(f"{base}:{counter}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


def make_generator(seed: int, device: torch.device) -> torch.Generator:
    """A generator on ``device`` seeded with ``seed``."""
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    return generator


def sample_tokens(
    logits: torch.Tensor, generators: Sequence[torch.Generator]
) -> tuple[list[int], list[float]]:
    """Sample one token per row of ``logits [B, V]`` at temperature 1; return the token ids
    and their log-probs (FP32 log-softmax of the full vocabulary)."""
    logprobs = torch.log_softmax(logits.float(), dim=-1)
    uniform = torch.stack(
        [
            torch.rand(logits.shape[1], generator=g, device=logits.device, dtype=torch.float32)
            for g in generators
        ]
    )
    # Gumbel-max: argmax(log p + G), G = -log(-log U). U = 0 gives G = -inf (never chosen).
    gumbel = -torch.log(-torch.log(uniform))
    tokens = torch.argmax(logprobs + gumbel, dim=-1)
    chosen = logprobs.gather(1, tokens[:, None])[:, 0]
    return tokens.tolist(), chosen.tolist()
