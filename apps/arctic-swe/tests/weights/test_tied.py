"""Tests for ``arctic_swe.weights._tied``: tied aliases are found once, left out of every
written weight set, and accepted (then dropped) by the reader."""

from __future__ import annotations

import torch

from arctic_swe.weights import owned_weights, tied_aliases, tied_spec, weight_spec


def test_the_tied_head_is_an_alias_not_a_required_name(model: torch.nn.Module) -> None:
    assert "lm_head.weight" in tied_spec(model)
    assert "lm_head.weight" not in weight_spec(model)
    assert set(weight_spec(model)) | set(tied_spec(model)) == set(model.state_dict())
    assert tied_aliases(model) == frozenset(tied_spec(model)) == {"lm_head.weight"}


def test_owned_weights_are_cpu_copies_without_aliases(model: torch.nn.Module) -> None:
    weights = owned_weights(model)
    assert set(weights) == set(weight_spec(model))
    state = model.state_dict()
    name = "model.embed_tokens.weight"
    assert torch.equal(weights[name], state[name])
    assert weights[name].data_ptr() != state[name].data_ptr()  # a copy, not a view


def test_an_untied_model_has_no_alias() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 2))
    assert tied_aliases(model) == frozenset()
    assert tied_spec(model) == {}
