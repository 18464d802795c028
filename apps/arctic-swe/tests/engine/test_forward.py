"""The batched forward over cached sequences against one full forward of the model.

The reference is the model's own ``forward`` over the whole sequence in float64 (the slow,
readable oracle); the engine path runs FP32 with per-slot caches, any chunking, any batch mix.
"""

from __future__ import annotations

import copy

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from transformers import Qwen3_5ForCausalLM

from arctic_swe.engine import CachePools, batched_forward

from .conftest import VOCAB, tiny_model

MODEL = tiny_model()
ORACLE = copy.deepcopy(MODEL).double()


@torch.no_grad()
def oracle_logprobs(tokens: list[int]) -> torch.Tensor:
    """[T, V] float64 next-token log-probs after each prefix."""
    logits = ORACLE(torch.tensor([tokens])).logits[0]
    return torch.log_softmax(logits, -1)


def _pools(capacity: int = 4) -> CachePools:
    return CachePools(MODEL.config, capacity, torch.device("cpu"), torch.float32)


def test_prefill_then_batched_decode_matches_the_float64_full_forward() -> None:
    generator = torch.Generator().manual_seed(0)
    sequences = [torch.randint(0, VOCAB, (n,), generator=generator).tolist() for n in (25, 6, 15)]
    references = [oracle_logprobs(s) for s in sequences]
    pools = _pools()
    slots, cut = [2, 0, 3], [11, 2, 6]
    logits = batched_forward(
        MODEL, pools, slots, [s[:c] for s, c in zip(sequences, cut, strict=True)], [0, 0, 0]
    )
    worst = max(
        float((torch.log_softmax(logits[b].double(), -1) - references[b][cut[b] - 1]).abs().max())
        for b in range(3)
    )
    position = list(cut)
    while active := [b for b in range(3) if position[b] < len(sequences[b])]:
        logits = batched_forward(
            MODEL,
            pools,
            [slots[b] for b in active],
            [[sequences[b][position[b]]] for b in active],
            [position[b] for b in active],
        )
        for row, b in enumerate(active):
            got = torch.log_softmax(logits[row].double(), -1)
            worst = max(worst, float((got - references[b][position[b]]).abs().max()))
            position[b] += 1
    assert worst < 2e-5, worst


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    data=st.data(),
    lengths=st.lists(st.integers(min_value=1, max_value=24), min_size=1, max_size=3),
)
def test_any_chunking_and_batch_mix_gives_the_full_forward(
    data: st.DataObject, lengths: list[int]
) -> None:
    """Split each sequence into random chunks; feed chunks of several sequences together
    (mixed widths, padding); the last logits of every chunk match the oracle."""
    sequences = [
        data.draw(st.lists(st.integers(0, VOCAB - 1), min_size=n, max_size=n)) for n in lengths
    ]
    references = [oracle_logprobs(s) for s in sequences]  # position p depends on s[:p+1] only
    pools = _pools(len(sequences))
    fed = [0] * len(sequences)
    while any(f < len(s) for f, s in zip(fed, sequences, strict=True)):
        rows = [b for b in range(len(sequences)) if fed[b] < len(sequences[b])]
        sizes = [data.draw(st.integers(1, len(sequences[b]) - fed[b])) for b in rows]
        chunks = [sequences[b][fed[b] : fed[b] + k] for b, k in zip(rows, sizes, strict=True)]
        logits = batched_forward(MODEL, pools, rows, chunks, [fed[b] for b in rows])
        for row, (b, k) in enumerate(zip(rows, sizes, strict=True)):
            fed[b] += k
            expected = references[b][fed[b] - 1]
            got = torch.log_softmax(logits[row].double(), -1)
            assert float((got - expected).abs().max()) < 2e-5


def test_slots_are_independent_and_a_reset_slot_starts_over() -> None:
    pools = _pools(2)
    first = [5, 9, 2, 7, 7, 1]
    batched_forward(MODEL, pools, [0], [first], [0])
    pools.reset([0])
    fresh = batched_forward(MODEL, pools, [0], [[3, 4, 5]], [0])
    other = batched_forward(MODEL, pools, [1], [[3, 4, 5]], [0])
    assert torch.allclose(fresh, other, atol=1e-6)
    expected = oracle_logprobs([3, 4, 5])[-1]
    assert torch.allclose(torch.log_softmax(fresh[0].double(), -1), expected, atol=2e-5)


def test_kv_cache_growth_mid_sequence_is_transparent() -> None:
    pools = _pools(1)
    tokens = torch.randint(0, VOCAB, (300,), generator=torch.Generator().manual_seed(5)).tolist()
    assert pools.kv_length < 300
    batched_forward(MODEL, pools, [0], [tokens[:250]], [0])
    logits = batched_forward(MODEL, pools, [0], [tokens[250:]], [250])
    assert pools.kv_length >= 300
    expected = oracle_logprobs(tokens)[-1]
    assert torch.allclose(torch.log_softmax(logits[0].double(), -1), expected, atol=2e-5)


@pytest.mark.parametrize("tied", [False])
def test_untied_lm_head_is_used(tied: bool) -> None:
    from arctic_swe.model import build_policy, policy_config

    model: Qwen3_5ForCausalLM = build_policy(policy_config(VOCAB, tie_word_embeddings=tied), 3)
    with torch.no_grad():
        model.lm_head.weight.mul_(3.0)
        reference = torch.log_softmax(model(torch.tensor([[1, 2, 3]])).logits[0, -1].double(), -1)
    pools = CachePools(model.config, 1, torch.device("cpu"), torch.float32)
    logits = batched_forward(model, pools, [0], [[1, 2, 3]], [0])
    assert torch.allclose(torch.log_softmax(logits[0].double(), -1), reference, atol=2e-5)
