"""The decode step against the float64 full forward, on each of its branches and both paths.

``decode_forward`` takes shortcuts only a one-token step allows (fused projections, cache views
for consecutive slots, no mask at equal positions, a multiply-add convolution) — through the
prepared FP32 plan for an FP32 model, through the generic module-calling step otherwise; every
branch of both must still give the model's own next-token distribution, and a weight written
in place or cast must never be served from a stale fused copy.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
import torch

import arctic_swe.engine._decode as decode_module
from arctic_swe.engine import CachePools, batched_forward
from arctic_swe.engine._decode import decode_forward
from arctic_swe.model import assign_weights, set_compute_dtype

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


@pytest.fixture(params=["plan", "generic"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run the test through the FP32 plan (checked to be taken) or the generic step."""
    calls = []
    if request.param == "generic":
        monkeypatch.setattr(decode_module, "decode_plan", lambda model, context: None)
    else:
        real = decode_module.decode_fp32

        def counted(*args: Any) -> torch.Tensor:
            calls.append(1)
            return real(*args)

        monkeypatch.setattr(decode_module, "decode_fp32", counted)
    yield request.param
    assert bool(calls) == (request.param == "plan")


@pytest.mark.usefixtures("path")
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


@pytest.mark.usefixtures("path")
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


def test_a_model_cast_after_a_decode_step_is_decoded_in_its_new_dtype() -> None:
    """A dtype cast swaps each parameter's storage but keeps its identity and version counter:
    the FP32 plan (and the generic path's fused copies) must notice it."""
    sequence = _sequences([7], seed=3)[0]
    model = tiny_model(seed=8)
    pools = CachePools(model.config, 1, torch.device("cpu"), torch.float32)
    batched_forward(model, pools, [0], [sequence[:5]], [0])
    decode_forward(model, pools, [0], [sequence[5]], [5])  # FP32 plan built
    set_compute_dtype(model, torch.bfloat16)
    bf16_pools = CachePools(model.config, 1, torch.device("cpu"), torch.bfloat16)
    batched_forward(model, bf16_pools, [0], [sequence[:5]], [0])
    logits = decode_forward(model, bf16_pools, [0], [sequence[5]], [5])  # must not raise
    with torch.no_grad():
        expected = torch.log_softmax(model(torch.tensor([sequence[:6]])).logits[0, -1].double(), -1)
    got = torch.log_softmax(logits[0].double(), -1)
    assert float((got - expected).abs().max()) < 0.1  # bf16 compute: agree to bf16 rounding
