"""The decode fast path against the float64 full forward, on each of its branches.

``decode_forward`` takes shortcuts only a one-token step allows (fused projections, cache views
for consecutive slots, no mask at equal positions, a multiply-add convolution); every branch must
still give the model's own next-token distribution, and a weight written in place must never be
served from a stale fused copy.
"""

from __future__ import annotations

import copy

import pytest
import torch

from arctic_swe.engine import CachePools, batched_forward
from arctic_swe.engine._decode import decode_forward
from arctic_swe.model import assign_weights

from .conftest import VOCAB, perturbed, tiny_model

MODEL = tiny_model()
ORACLE = copy.deepcopy(MODEL).double()


@torch.no_grad()
def _reference(model: torch.nn.Module, tokens: list[int]) -> torch.Tensor:
    """float64 next-token log-probs after the whole of ``tokens`` (one full forward)."""
    return torch.log_softmax(model(torch.tensor([tokens])).logits[0, -1].double(), -1)


def _sequences(lengths: list[int], seed: int) -> list[list[int]]:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randint(0, VOCAB, (n,), generator=generator).tolist() for n in lengths]


@pytest.mark.parametrize(
    ("slots", "lengths"),
    [
        ([0, 1, 2], [7, 7, 7]),  # consecutive slots, equal positions: views, no mask
        ([1, 2, 3], [4, 9, 6]),  # consecutive slots, unequal positions: views, masked
        ([3, 0, 2], [5, 5, 5]),  # scattered slots: gather / scatter, no mask
        ([2, 0], [3, 8]),  # scattered slots, unequal positions
    ],
)
def test_decode_steps_match_the_float64_full_forward(slots: list[int], lengths: list[int]) -> None:
    sequences = _sequences([n + 4 for n in lengths], seed=len(slots) + sum(lengths))
    pools = CachePools(MODEL.config, 4, torch.device("cpu"), torch.float32)
    batched_forward(
        MODEL,
        pools,
        slots,
        [s[:n] for s, n in zip(sequences, lengths, strict=True)],
        [0] * len(slots),
    )
    worst = 0.0
    for offset in range(4):  # four decode steps: the conv history and KV cache roll forward
        positions = [n + offset for n in lengths]
        logits = decode_forward(
            MODEL,
            pools,
            slots,
            [s[p] for s, p in zip(sequences, positions, strict=True)],
            positions,
        )
        for row, (sequence, position) in enumerate(zip(sequences, positions, strict=True)):
            expected = _reference(ORACLE, sequence[: position + 1])
            got = torch.log_softmax(logits[row].double(), -1)
            worst = max(worst, float((got - expected).abs().max()))
    assert worst < 2e-5, worst


def test_a_weight_written_in_place_is_used_at_the_next_step() -> None:
    """The fused projection weights and norm gains are derived copies: an in-place write (a
    refresh, an optimizer step) must reach the very next decode step."""
    sequence = _sequences([6], seed=9)[0]

    def old_cache() -> CachePools:
        pools = CachePools(MODEL.config, 1, torch.device("cpu"), torch.float32)
        batched_forward(tiny_model(seed=4), pools, [0], [sequence[:5]], [0])
        return pools

    model = tiny_model(seed=4)
    decode_forward(model, old_cache(), [0], [sequence[5]], [5])  # builds the fused copies
    new = perturbed(model, seed=1, scale=0.5)
    assign_weights(model, new)
    logits = decode_forward(model, old_cache(), [0], [sequence[5]], [5])
    fresh = tiny_model(seed=4)
    assign_weights(fresh, new)
    expected = decode_forward(fresh, old_cache(), [0], [sequence[5]], [5])
    assert torch.allclose(logits, expected, atol=1e-5)
    stale = decode_forward(tiny_model(seed=4), old_cache(), [0], [sequence[5]], [5])
    assert not torch.allclose(logits, stale, atol=1e-3)  # the test can see a stale copy
