"""Full-vocabulary temperature-1 sampling: exact distribution, per-sequence streams."""

from __future__ import annotations

import random

import pytest
import torch

from arctic_swe.engine import derive_seed, sample_tokens
from arctic_swe.engine._sampling import make_generator

# chi-square critical value for 7 degrees of freedom at p = 0.001
CHI2_7_999 = 24.32


def test_samples_follow_the_softmax_distribution_chi_square() -> None:
    logits = torch.tensor([[2.0, 1.0, 0.5, 0.0, -0.5, -1.0, -3.0, 1.5]])
    probs = torch.softmax(logits.double(), -1)[0]
    generator = make_generator(11)
    draws = 6000
    counts = torch.zeros(8, dtype=torch.float64)
    for _ in range(draws):
        tokens, _ = sample_tokens(logits, [generator])
        counts[tokens[0]] += 1
    expected = probs * draws
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < CHI2_7_999, (chi2, counts.tolist())
    assert counts[6] > 0  # the tail is reachable: no top-k / top-p truncation


def test_recorded_logprob_is_the_full_vocabulary_log_softmax() -> None:
    logits = torch.randn(4, 50)
    generators = [make_generator(s) for s in range(4)]
    tokens, logprobs = sample_tokens(logits, generators)
    reference = torch.log_softmax(logits.double(), -1)
    for row, (token, logprob) in enumerate(zip(tokens, logprobs, strict=True)):
        assert abs(logprob - float(reference[row, token])) < 1e-6


def test_a_rows_sample_depends_only_on_its_own_stream() -> None:
    logits = torch.randn(3, 40)
    alone, _ = sample_tokens(logits[1:2], [make_generator(7)])
    together, _ = sample_tokens(logits, [make_generator(s) for s in (1, 7, 2)])
    assert together[1] == alone[0]


def test_derived_seeds_are_distinct_and_reproducible() -> None:
    seeds = [derive_seed(0, n) for n in range(1000)]
    assert len(set(seeds)) == 1000
    assert seeds == [derive_seed(0, n) for n in range(1000)]
    assert derive_seed(1, 5) != derive_seed(0, 5)
    assert all(0 <= s < 2**63 for s in seeds)


def _reference_tokens(logits: torch.Tensor, generators: list[random.Random]) -> list[int]:
    """The slow readable sampler: per row, the FP32 softmax weights, their float64 running sum,
    one float64 uniform from the row's own stream, the first token whose running sum exceeds
    it."""
    tokens = []
    for row, generator in zip(logits, generators, strict=True):
        weights = (row.float() - row.float().max()).exp().double()
        running = torch.cumsum(weights, 0)
        target = generator.random() * float(running[-1])
        tokens.append(int((running <= target).sum()))
    return tokens


@pytest.mark.parametrize("vocab", [3, 64, 100, 4096])
@pytest.mark.parametrize("sharpness", [0.0, 1.0, 8.0])
def test_batched_sampler_matches_the_per_row_reference_with_the_same_seeds(
    vocab: int, sharpness: float
) -> None:
    logits = torch.randn(9, vocab, generator=torch.Generator().manual_seed(vocab)) * sharpness
    seeds = [derive_seed(vocab, row) for row in range(9)]
    tokens, logprobs = sample_tokens(logits, [make_generator(s) for s in seeds])
    expected = _reference_tokens(logits, [make_generator(s) for s in seeds])
    assert tokens == expected
    reference = torch.log_softmax(logits.double(), -1)
    for row, (token, logprob) in enumerate(zip(tokens, logprobs, strict=True)):
        assert abs(logprob - float(reference[row, token])) < 1e-6


def test_zero_probability_tokens_are_never_drawn() -> None:
    logits = torch.full((64, 130), -float("inf"))
    logits[:, 65] = 0.0  # a lone finite logit in the middle of a block
    logits[::2, 129] = 0.0  # and, in every other row, a second one in the padded last block
    tokens, logprobs = sample_tokens(logits, [make_generator(s) for s in range(64)])
    assert set(tokens[1::2]) == {65}
    assert set(tokens[::2]) == {65, 129}  # even odds over 32 rows
    assert all(lp <= 0.0 and lp > -float("inf") for lp in logprobs)
