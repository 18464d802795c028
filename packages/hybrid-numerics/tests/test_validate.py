"""Bad input gets a clear GDNInputError (a ValueError) before any computation."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from hybrid_numerics import (
    GDNInputError,
    chunk_gated_delta_rule,
    fused_recurrent_gated_delta_rule,
)

Args = dict[str, object]


def _valid() -> Args:
    B, T, H, HV, K, V = 1, 6, 2, 4, 8, 4
    return {
        "q": torch.randn(B, T, H, K),
        "k": torch.randn(B, T, H, K),
        "v": torch.randn(B, T, HV, V),
        "g": -torch.rand(B, T, HV),
        "beta": torch.rand(B, T, HV),
        "initial_state": torch.zeros(B, HV, K, V),
    }


def _set(key: str, value: Callable[[Args], object]) -> Callable[[Args], None]:
    def apply(args: Args) -> None:
        args[key] = value(args)

    return apply


def _t(args: Args, key: str) -> torch.Tensor:
    x = args[key]
    assert isinstance(x, torch.Tensor)
    return x


CORRUPTIONS: dict[str, tuple[Callable[[Args], None], str]] = {
    "q rank": (_set("q", lambda a: _t(a, "q")[0]), "q must have rank 4"),
    "k shape": (_set("k", lambda a: _t(a, "k")[..., :4].contiguous()), "same shape"),
    "heads not grouped": (_set("v", lambda a: torch.randn(1, 6, 3, 4)), "multiple of q/k heads"),
    "g shape": (_set("g", lambda a: _t(a, "g")[:, :, :2].contiguous()), "g must have shape"),
    "beta rank": (_set("beta", lambda a: _t(a, "beta")[..., None]), "beta must have rank 3"),
    "int q": (_set("q", lambda a: _t(a, "q").long()), "q has dtype"),
    "int v": (_set("v", lambda a: _t(a, "v").long()), "v has dtype"),
    "non-contiguous k": (_set("k", lambda a: _t(a, "k").transpose(2, 3)), "contiguous"),
    "not a tensor": (_set("beta", lambda a: 0.5), "must be a torch.Tensor"),
    "bf16 state": (
        _set("initial_state", lambda a: _t(a, "initial_state").bfloat16()),
        "initial_state has dtype",
    ),
    "state shape": (
        _set("initial_state", lambda a: torch.zeros(2, 4, 8, 4)),
        "initial_state must have shape",
    ),
    "cu_seqlens decreasing": (
        _set("cu_seqlens", lambda a: torch.tensor([0, 4, 2, 6])),
        "strictly increasing",
    ),
    "cu_seqlens short": (_set("cu_seqlens", lambda a: torch.tensor([0, 5])), "end at T=6"),
    "cu_seqlens float": (_set("cu_seqlens", lambda a: torch.tensor([0.0, 6.0])), "dtype"),
    "negative scale": (_set("scale", lambda a: -1.0), "scale must be"),
    "nan scale": (_set("scale", lambda a: float("nan")), "scale must be"),
    "bad backend": (_set("backend", lambda a: "cuda"), "backend must be"),
    "dt_bias alone": (_set("dt_bias", lambda a: torch.zeros(4)), "dt_bias given without"),
    "A_log without the flag": (_set("A_log", lambda a: torch.zeros(4)), "A_log given without"),
    "gate flag without A_log": (_set("use_gate_in_kernel", lambda a: True), "needs A_log"),
    "A_log shape": (
        lambda a: a.update(A_log=torch.zeros(3), use_gate_in_kernel=True),
        "A_log must have shape",
    ),
    "bf16 state, fla layout": (
        lambda a: a.update(initial_state=torch.zeros(1, 4, 4, 8).bfloat16(), state_v_first=True),
        "initial_state has dtype",
    ),
    "neg eigval without sigmoid": (_set("allow_neg_eigval", lambda a: True), "requires"),
}


@given(
    name=st.sampled_from(sorted(CORRUPTIONS)),
    fn=st.sampled_from([chunk_gated_delta_rule, fused_recurrent_gated_delta_rule]),
)
def test_every_corruption_raises_a_value_error_naming_the_problem(
    name: str, fn: Callable[..., object]
) -> None:
    args = _valid()
    corrupt, message = CORRUPTIONS[name]
    corrupt(args)
    if "cu_seqlens" in args:  # packed input: one state per sequence
        args["initial_state"] = None
    with pytest.raises(ValueError, match=message) as info:
        fn(**args)
    assert isinstance(info.value, GDNInputError)


def test_valid_arguments_pass() -> None:
    o, s = chunk_gated_delta_rule(**_valid(), output_final_state=True)  # type: ignore[arg-type]
    assert o.shape == (1, 6, 4, 4)
    assert s is not None
    assert s.shape == (1, 4, 8, 4)


def test_state_cache_and_initial_state_are_exclusive() -> None:
    args = _valid()
    with pytest.raises(GDNInputError, match="either initial_state or state_cache"):
        chunk_gated_delta_rule(
            **args,  # type: ignore[arg-type]
            state_cache=torch.zeros(1, 4, 8, 4),
            state_indices=torch.tensor([0]),
        )


def test_validate_state_cache_reports_whether_every_slot_is_live() -> None:
    from hybrid_numerics._validate import GDNShapes, validate_state_cache

    shapes = GDNShapes(B=2, T=1, H=1, HV=1, K=2, V=2, N=2)
    pool = torch.zeros(4, 1, 2, 2)
    cpu = torch.device("cpu")
    assert validate_state_cache(pool, torch.tensor([3, 0]), shapes, None, cpu) is True
    assert validate_state_cache(pool, torch.tensor([3, -1]), shapes, None, cpu) is False
    assert validate_state_cache(None, None, shapes, None, cpu) is False
