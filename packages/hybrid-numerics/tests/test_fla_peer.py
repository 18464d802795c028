"""The fla-compatible call surface against fla itself (fla-core 0.6.0's own signatures), not
against our reading of it. fla is never in the workspace environment (when importable,
transformers routes Qwen3.5 layers to its GPU kernels), so this module runs in
`nox -s fla_peer`, which installs fla-core 0.6.0 into an environment of its own."""

from __future__ import annotations

import inspect

import pytest

fla_gdr = pytest.importorskip(
    "fla.ops.gated_delta_rule", reason="the peer, fla-core 0.6.0, runs in `nox -s fla_peer`"
)

from hybrid_numerics import (  # noqa: E402
    chunk_gated_delta_rule,
    fused_recurrent_gated_delta_rule,
)

#: fla 0.6 parameters this package refuses by name (README, "Differences from fla 0.6's call
#: surface"): a call naming one gets a typed error, never a silent different result.
REFUSED = {"gk", "gv", "cp_context"}


def _positional(function: object) -> list[str]:
    return [
        name
        for name, parameter in inspect.signature(function).parameters.items()  # type: ignore[arg-type]
        if parameter.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    ]


def _named(function: object) -> set[str]:
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {
        name
        for name, parameter in inspect.signature(function).parameters.items()  # type: ignore[arg-type]
        if parameter.kind in kinds
    }


def test_chunk_takes_flas_positional_parameters_in_flas_order() -> None:
    theirs = _positional(fla_gdr.chunk_gated_delta_rule)
    assert _positional(chunk_gated_delta_rule) == theirs


def test_recurrent_binds_no_positional_argument_differently_from_fla() -> None:
    ours = _positional(fused_recurrent_gated_delta_rule)
    theirs = _positional(fla_gdr.fused_recurrent_gated_delta_rule)
    # q, k, v, g bind alike; fla's fifth is `gk`, ours `beta`, after which ours is keyword-only
    # (a tensor passed fifth as fla's `gk` is refused by shape: test_fla_surface.py)
    assert theirs[4] == "gk"
    assert ours == [*theirs[:4], "beta"]


@pytest.mark.parametrize("name", ["chunk_gated_delta_rule", "fused_recurrent_gated_delta_rule"])
def test_every_fla_keyword_is_accepted_or_refused_by_name(name: str) -> None:
    ours = _named(
        {
            "chunk_gated_delta_rule": chunk_gated_delta_rule,
            "fused_recurrent_gated_delta_rule": fused_recurrent_gated_delta_rule,
        }[name]
    )
    theirs = _named(getattr(fla_gdr, name))
    missing = theirs - ours - REFUSED
    assert not missing, f"fla 0.6 accepts {sorted(missing)}, which {name} neither takes nor refuses"
