"""The trainer's path end to end: hidden states -> token_logprobs -> cispo_loss -> LM-head gradient."""

from __future__ import annotations

import torch

from cispo_loss import LossConfig, cispo_loss, default_normalizer, group_advantages, token_logprobs
from cispo_loss.reference import reference_cispo_loss, reference_token_logprobs

F64 = torch.float64


def _setup(seed: int = 0) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    batch, length, width, vocab = 6, 9, 5, 23
    hidden = torch.randn(batch, length, width, generator=gen, dtype=F64)
    weight = torch.randn(vocab, width, generator=gen, dtype=F64)
    targets = torch.randint(0, vocab, (batch, length), generator=gen)
    with torch.no_grad():
        lp, _ = reference_token_logprobs(hidden, weight, targets)
    rollout = (lp + 0.4 * torch.randn(batch, length, generator=gen, dtype=F64)).clamp(max=0)
    mask = torch.rand(batch, length, generator=gen) < 0.8
    rewards = torch.tensor([1.0, 0.0, 1.0, 1.0, 0.0, 0.0], dtype=F64)
    advantages = group_advantages(rewards, torch.tensor([0, 0, 0, 1, 1, 1]))
    return {
        "hidden": hidden,
        "weight": weight,
        "targets": targets,
        "rollout": rollout,
        "mask": mask,
        "adv": advantages,
    }


def test_lm_head_gradient_matches_the_reference_pipeline() -> None:
    s = _setup()
    config = LossConfig(entropy_coef=0.01)
    h1, w1 = s["hidden"].clone().requires_grad_(True), s["weight"].clone().requires_grad_(True)
    lp, ent = token_logprobs(h1, w1, s["targets"], chunk_size=7, vocab_chunk_size=5)
    cispo_loss(lp, s["rollout"], s["adv"], s["mask"], entropy=ent, config=config).loss.backward()

    h2, w2 = s["hidden"].clone().requires_grad_(True), s["weight"].clone().requires_grad_(True)
    ref_lp, ref_ent = reference_token_logprobs(h2, w2, s["targets"])
    mask = s["mask"]
    rows = range(mask.shape[0])
    reference_cispo_loss(
        [ref_lp[i][mask[i]] for i in rows],
        [s["rollout"][i][mask[i]].tolist() for i in rows],
        s["adv"].tolist(),
        config=config,
        entropy=[ref_ent[i][mask[i]] for i in rows],
    ).backward()
    assert h1.grad is not None
    assert w1.grad is not None
    torch.testing.assert_close(h1.grad, h2.grad, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(w1.grad, w2.grad, rtol=1e-10, atol=1e-12)


def test_micro_batched_lm_head_gradient_equals_the_full_batch() -> None:
    s = _setup(1)
    full_w = s["weight"].clone().requires_grad_(True)
    lp, _ = token_logprobs(s["hidden"], full_w, s["targets"])
    cispo_loss(lp, s["rollout"], s["adv"], s["mask"]).loss.backward()

    micro_w = s["weight"].clone().requires_grad_(True)
    parts = [[0, 1, 2, 3], [4], [5]]
    total = sum(default_normalizer(s["mask"][p]) for p in parts)
    for p in parts:
        lp, _ = token_logprobs(s["hidden"][p], micro_w, s["targets"][p])
        cispo_loss(lp, s["rollout"][p], s["adv"][p], s["mask"][p], normalizer=total).loss.backward()
    assert full_w.grad is not None
    assert micro_w.grad is not None
    torch.testing.assert_close(micro_w.grad, full_w.grad, rtol=1e-12, atol=1e-14)
