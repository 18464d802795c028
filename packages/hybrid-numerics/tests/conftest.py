"""Shared test helpers: random Gated DeltaNet inputs and the RMS-relative error metric.

The Triton kernels are tested on CPU tensors through Triton's interpreter. ``triton.jit``
decides between compiling and interpreting when a kernel is *defined*, so the switch has to be
set before :mod:`hybrid_numerics._triton_*` is first imported - i.e. here, at collection.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

# The CI machine has 2 cores shared by several test runs: OpenMP threads that spin-wait for a
# busy sibling core make a 64x128 matmul ~70x slower (measured). One intra-op thread is stable.
torch.set_num_threads(1)


@dataclass(frozen=True)
class GDNInputs:
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    g: torch.Tensor
    beta: torch.Tensor
    h0: torch.Tensor

    def cast(self, dtype: torch.dtype, requires_grad: bool = False) -> GDNInputs:
        return GDNInputs(
            *(x.detach().to(dtype).requires_grad_(requires_grad) for x in self.tensors())
        )

    def tensors(self) -> tuple[torch.Tensor, ...]:
        return (self.q, self.k, self.v, self.g, self.beta, self.h0)


def make_gdn_inputs(
    B: int, T: int, H: int, HV: int, K: int, V: int, *, seed: int = 0, N: int | None = None
) -> GDNInputs:
    """Inputs with fla's test statistics: log-sigmoid decays, beta in (0, 1), unit-ish q/k/v."""
    gen = torch.Generator().manual_seed(seed)
    f64 = torch.float64

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen, dtype=f64)

    g = torch.nn.functional.logsigmoid(randn(B, T, HV))
    beta = torch.rand(B, T, HV, generator=gen, dtype=f64)
    n = B if N is None else N
    return GDNInputs(
        randn(B, T, H, K), randn(B, T, H, K), randn(B, T, HV, V), g, beta, randn(n, HV, K, V)
    )


def rms_rel(actual: torch.Tensor, expected: torch.Tensor) -> float:
    """RMS-relative error ``||a - e||_2 / ||e||_2`` in float64."""
    a, e = actual.detach().double(), expected.detach().double()
    return float((a - e).norm() / e.norm().clamp_min(1e-300))


@pytest.fixture
def gdn_inputs() -> Callable[..., GDNInputs]:
    return make_gdn_inputs


def tiny_qwen3_5_config(**overrides: object) -> object:
    """A tiny random Qwen3.5 text config: 3 GDN layers (GQA 2 -> 4 value heads) + 1 attention."""
    from transformers import Qwen3_5TextConfig

    fields: dict[str, object] = {
        "vocab_size": 96,
        "hidden_size": 64,
        "intermediate_size": 96,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "linear_key_head_dim": 16,
        "linear_value_head_dim": 16,
        "linear_num_key_heads": 2,
        "linear_num_value_heads": 4,
        "layer_types": ["linear_attention"] * 3 + ["full_attention"],
    }
    fields.update(overrides)
    return Qwen3_5TextConfig(**fields)


def cache_kwargs(model: object, cache: object) -> dict[str, object]:
    """``{keyword: cache}`` for ``model(...)``: ``cache`` from transformers 5.24 on,
    ``past_key_values`` before."""
    from hybrid_numerics._qwen3_5_compat import cache_keyword

    return {cache_keyword(model): cache}


def recurrent_state(cache: object, layer_idx: int) -> torch.Tensor:
    """A layer's cached recurrent state, on every supported transformers cache layout."""
    from hybrid_numerics._qwen3_5_compat import cached_states

    state = cached_states(cache, layer_idx)[1]
    assert state is not None, f"layer {layer_idx} has no cached recurrent state"
    return state


def require_triton() -> None:
    """Triton is a declared dependency on Linux: there a triton that cannot be imported fails the
    module (a broken install, e.g. triton 3.2 without setuptools, must not pass as skipped);
    elsewhere the module is skipped."""
    if sys.platform == "linux":
        import triton  # noqa: F401
    else:
        pytest.importorskip("triton")
