"""The reference itself, checked against numbers worked out by hand."""

from __future__ import annotations

import math

import pytest
import torch

from cispo_loss import LossConfig
from cispo_loss.reference import (
    reference_cispo_loss,
    reference_group_advantages,
    reference_mismatch_kl,
    reference_token_logprobs,
)


def test_uniform_logits_give_log_v() -> None:
    lp, ent = reference_token_logprobs(
        torch.zeros(2, 3, dtype=torch.float64),
        torch.ones(5, 3, dtype=torch.float64),
        torch.tensor([0, 4]),
    )
    torch.testing.assert_close(lp, torch.full((2,), -math.log(5), dtype=torch.float64))
    torch.testing.assert_close(ent, torch.full((2,), math.log(5), dtype=torch.float64))


def test_group_advantages_by_hand() -> None:
    assert reference_group_advantages([1.0, 0.0, 0.0, 1.0], [0, 0, 0, 1]) == pytest.approx(
        [2 / 3, -1 / 3, -1 / 3, 0.0]
    )


def test_cispo_loss_by_hand() -> None:
    # rollout 0: two tokens, ω = e^0.5 (kept) and e^1 (masked: 2.718 > 2); rollout 1: one token ω = 1
    lp = [
        torch.tensor([-1.0, -0.5], dtype=torch.float64),
        torch.tensor([-2.0], dtype=torch.float64),
    ]
    rollout = [[-1.5, -1.5], [-2.0]]
    loss = reference_cispo_loss(lp, rollout, [2.0, -1.0])
    want = (-(math.exp(0.5) * 2.0 * -1.0) + 0.0 - (1.0 * -1.0 * -2.0)) / 3
    assert float(loss) == pytest.approx(want)
    per_rollout = reference_cispo_loss(
        lp, rollout, [2.0, -1.0], config=LossConfig(aggregation="rollout_mean")
    )
    assert float(per_rollout) == pytest.approx((math.exp(0.5) * 2.0 / 2 - 2.0) / 2)


def test_mismatch_kl_by_hand() -> None:
    assert reference_mismatch_kl([[-1.0, -1.0]], [[-1.0, -2.0]]) == pytest.approx(
        (math.e - 1 - 1) / 2
    )
    assert math.isnan(reference_mismatch_kl([[]], [[]]))
