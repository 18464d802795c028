"""Validation helpers: masks, finiteness and packed offsets."""

from __future__ import annotations

import pytest
import torch

from cispo_loss import InputError
from cispo_loss._checks import as_bool_mask, check_cu_seqlens, require_finite


def test_numeric_masks_become_bool() -> None:
    assert torch.equal(as_bool_mask("m", torch.tensor([0.0, 1.0])), torch.tensor([False, True]))
    assert torch.equal(
        as_bool_mask("m", torch.tensor([1, 0], dtype=torch.uint8)), torch.tensor([True, False])
    )
    with pytest.raises(InputError, match=r"^m: "):
        as_bool_mask("m", torch.tensor([0.5]))


def test_finiteness_can_be_restricted_to_positions() -> None:
    values = torch.tensor([1.0, float("nan"), float("inf")])
    require_finite("v", values, where=torch.tensor([True, False, False]))
    with pytest.raises(InputError, match="2 NaN/inf"):
        require_finite("v", values)
    with pytest.raises(InputError, match="1 NaN/inf value\\(s\\) at trainable positions"):
        require_finite("v", values, where=torch.tensor([False, True, False]))


def test_cu_seqlens_lengths() -> None:
    assert check_cu_seqlens(torch.tensor([0, 3, 3, 7]), 7).tolist() == [3, 0, 4]
