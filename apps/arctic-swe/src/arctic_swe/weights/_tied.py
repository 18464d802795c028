"""Tied aliases: a state-dict name whose tensor is another name's (``lm_head.weight`` under
tied embeddings). ``save_pretrained`` leaves them out, vLLM skips them on load, and every
weight set this app writes leaves them out too; a reader accepts them and ignores them, since
the tied parameter loads from its owner."""

from __future__ import annotations

import torch

#: name -> (shape, dtype): what a weight set for a model holds, from a header or a model.
Spec = dict[str, tuple[tuple[int, ...], torch.dtype]]


def tied_aliases(model: torch.nn.Module) -> frozenset[str]:
    """State-dict names of ``model`` that alias an earlier name's tensor."""
    return frozenset(_split_spec(model)[1])


def weight_spec(model: torch.nn.Module) -> Spec:
    """What a weight set for ``model`` must hold: name -> (shape, dtype), aliases left out."""
    return _split_spec(model)[0]


def tied_spec(model: torch.nn.Module) -> Spec:
    """The tied aliases of ``model`` with their shapes and dtypes: a weight set may hold
    them (a plain ``state_dict()`` does); a reader checks them, then ignores them."""
    return _split_spec(model)[1]


def owned_weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A CPU copy of ``model``'s weights (each keeps its dtype), tied aliases left out."""
    aliases = tied_aliases(model)
    return {
        name: tensor.detach().to("cpu", copy=True)
        for name, tensor in model.state_dict(keep_vars=True).items()
        if name not in aliases
    }


def _split_spec(model: torch.nn.Module) -> tuple[Spec, Spec]:
    owners: Spec = {}
    aliases: Spec = {}
    seen: set[int] = set()
    for name, tensor in model.state_dict(keep_vars=True).items():
        target = aliases if id(tensor) in seen else owners
        seen.add(id(tensor))
        target[name] = (tuple(tensor.shape), tensor.dtype)
    return owners, aliases
