"""Padded and packed layouts map every token to its rollout."""

from __future__ import annotations

import torch

from cispo_loss._layout import per_rollout_sum, resolve_layout


def test_padded_layout() -> None:
    layout = resolve_layout(torch.zeros(2, 3), None)
    assert layout.num_rollouts == 2
    assert layout.token_shape == (2, 3)
    assert layout.rollout_of_token.tolist() == [0, 0, 0, 1, 1, 1]


def test_packed_layout_with_an_empty_rollout() -> None:
    layout = resolve_layout(torch.zeros(5), torch.tensor([0, 2, 2, 5]))
    assert layout.num_rollouts == 3
    assert layout.rollout_of_token.tolist() == [0, 0, 2, 2, 2]
    sums = per_rollout_sum(torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0]), layout)
    assert sums.tolist() == [3.0, 0.0, 12.0]
