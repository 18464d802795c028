"""Full-vocabulary sampling at temperature 1.0, one RNG stream per sequence.

Training rollouts must be drawn from π itself: top-k / top-p / min-p truncate the distribution
and make the recorded log-prob disagree with the trainer's (Arctic-SWE §3.3), so there is no such
option here. Each sequence owns a random stream (``random.Random``, the Mersenne Twister seeded
with the turn's seed: a host-side draw costs ~0.1 us, a ``torch.rand`` call with its own
generator ~4 us, which at 32 sequences per decode step was a tenth of the step) and draws
**one** float64 uniform (53 random bits) per token;
the token is where that uniform falls in the cumulative distribution of the softmax (inverse-CDF
sampling, an exact sample of the categorical), so what a sequence samples depends only on its
own seed and logits — never on which other sequences happen to share the batch.

Why not Gumbel-max (the engine's first sampler): it draws ``V`` uniforms per token and takes two
logarithms of each, which at a small model's decode step cost more than the forward itself. The
cumulative sums are float64 (a float32 running sum over thousands of terms would misplace the
tail tokens' intervals), in two levels: blocks of ``_BLOCK`` probabilities, then the chosen block.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence

import torch
from torch.nn import functional

#: Probabilities per block of the two-level cumulative sum.
_BLOCK = 64


def derive_seed(base: int, counter: int) -> int:
    """A 63-bit seed for request number ``counter`` of an engine seeded with ``base``
    (a hash, so neighbouring requests get unrelated streams)."""
    digest = hashlib.blake2b(f"{base}:{counter}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


def make_generator(seed: int) -> random.Random:
    """The random stream of one turn, seeded with ``seed``."""
    return random.Random(seed)


def sample_tokens(
    logits: torch.Tensor, generators: Sequence[random.Random]
) -> tuple[list[int], list[float]]:
    """Sample one token per row of ``logits [B, V]`` at temperature 1; return the token ids
    and their log-probs (log-softmax of the full vocabulary, from FP32 logits).

    Row ``b`` draws one ``float64`` uniform ``u`` from ``generators[b]`` and takes the first
    token whose cumulative probability exceeds ``u`` (tokens of zero probability have empty
    intervals: never chosen). Each token's probability is its FP32 softmax weight over their
    sum, up to FP32 rounding of the per-block sums.
    """
    x = logits.float()
    n_rows = x.shape[0]
    shifted = x - x.amax(dim=-1, keepdim=True)  # [B, V], <= 0: exp cannot overflow
    blocks = _blocks(shifted.exp())  # [B, nb, BLOCK] unnormalised probabilities
    mass = blocks.sum(dim=-1)  # [B, nb] FP32: a float64 copy of all V costs more than the rest
    ends = mass.double().cumsum(dim=-1)  # [B, nb]: cumulative mass at each block's end
    total = ends[:, -1:]  # [B, 1]
    draws = [g.random() for g in generators]
    uniform = torch.tensor(draws, dtype=torch.float64, device=x.device)
    target = uniform[:, None] * total  # [B, 1] in [0, total)
    block = _first_above(ends, target)  # [B, 1]
    before = functional.pad(ends, (1, 0)).gather(1, block)  # mass before the chosen block
    width = blocks.shape[2]
    inside = blocks.gather(1, block[:, :, None].expand(n_rows, 1, width))[:, 0]
    running = inside.double().cumsum(dim=-1)  # [B, BLOCK]
    # Where the target falls inside the block, rescaled from the block's FP32 mass to the
    # float64 sum of its terms: within a block the draw is exactly proportional to the weights.
    inner = (target - before) * running[:, -1:] / mass.gather(1, block).double()
    tokens = (block * width + _first_above(running, inner))[:, 0]
    chosen = shifted.gather(1, tokens[:, None])[:, 0].double() - total[:, 0].log()
    return tokens.tolist(), chosen.tolist()


def _blocks(weights: torch.Tensor) -> torch.Tensor:
    """``[B, V]`` -> ``[B, ceil(V / _BLOCK), _BLOCK]``, zero-padded at the end."""
    pad = -weights.shape[1] % _BLOCK
    padded = functional.pad(weights, (0, pad)) if pad else weights
    return padded.view(weights.shape[0], -1, _BLOCK)


def _first_above(cumulative: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Per row, the first index whose cumulative value exceeds ``target`` (``[B, 1]``), capped
    at the last index of positive mass: a target rounded up to the row's total still lands
    on a token that can be drawn."""
    found = torch.searchsorted(cumulative, target, right=True)
    last = torch.searchsorted(cumulative, cumulative[:, -1:].contiguous())  # reaches the total
    return torch.minimum(found, last)
