"""The Triton kernels against the float64 oracle - on CUDA, or on CPU under TRITON_INTERPRET=1.

The interpreter executes every program instance in Python, so the shapes are tiny; the kernels
are the same code that runs on the GPU.
"""

from __future__ import annotations

import os

import pytest
import torch

from hybrid_numerics import (
    chunk_gated_delta_rule,
    fused_recurrent_gated_delta_rule,
    reference_gated_delta_rule,
)

from .conftest import GDNInputs, make_gdn_inputs, require_triton, rms_rel

require_triton()
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
pytestmark = pytest.mark.skipif(
    DEVICE == "cpu" and os.environ.get("TRITON_INTERPRET") != "1",
    reason="no CUDA and TRITON_INTERPRET is not set",
)


def _on_device(x: GDNInputs) -> GDNInputs:
    return GDNInputs(*(t.to(DEVICE, torch.float32) for t in x.tensors()))


def _oracle(x: GDNInputs, **kw: object) -> tuple[torch.Tensor, torch.Tensor]:
    o, s = reference_gated_delta_rule(
        x.q, x.k, x.v, x.g, x.beta, initial_state=x.h0, output_final_state=True, **kw
    )
    assert s is not None
    return o, s


@pytest.mark.parametrize("fn", [chunk_gated_delta_rule, fused_recurrent_gated_delta_rule])
def test_kernels_match_the_oracle(fn: object) -> None:
    T = 70 if fn is chunk_gated_delta_rule else 6  # two chunks (one partial) / a few decode steps
    x = make_gdn_inputs(2, T, 1, 2, 16, 8, seed=T)
    ro, rs = _oracle(x, use_qk_l2norm=True)
    y = _on_device(x)
    o, s = fn(  # type: ignore[operator]
        y.q, y.k, y.v, y.g, y.beta, initial_state=y.h0, output_final_state=True,
        use_qk_l2norm=True, backend="triton",
    )  # fmt: skip
    assert s is not None
    assert s.dtype == torch.float32
    assert rms_rel(o.cpu(), ro) <= 1e-5
    assert rms_rel(s.cpu(), rs) <= 1e-5


def test_chunk_kernel_with_packed_sequences_and_grouped_heads() -> None:
    x = make_gdn_inputs(1, 80, 1, 2, 8, 8, seed=9, N=2)
    cu = torch.tensor([0, 65, 80])
    ro, rs = _oracle(x, cu_seqlens=cu)
    y = _on_device(x)
    o, s = chunk_gated_delta_rule(
        y.q, y.k, y.v, y.g, y.beta, initial_state=y.h0, output_final_state=True,
        cu_seqlens=cu.to(DEVICE), backend="triton",
    )  # fmt: skip
    assert s is not None
    assert rms_rel(o.cpu(), ro) <= 1e-5
    assert rms_rel(s.cpu(), rs) <= 1e-5


def test_recurrent_kernel_updates_the_cache_in_place() -> None:
    x = _on_device(make_gdn_inputs(3, 1, 1, 2, 16, 8, seed=2))
    cache = torch.randn(5, 2, 16, 8, device=DEVICE)
    slots = torch.tensor([3, -1, 0], device=DEVICE)
    before = cache.clone()
    ptr = cache.data_ptr()
    o, s = fused_recurrent_gated_delta_rule(
        x.q, x.k, x.v, x.g, x.beta, state_cache=cache, state_indices=slots, backend="triton"
    )
    assert s is None
    assert cache.data_ptr() == ptr
    # The same step on the torch path, from the same starting states.
    start = torch.stack([before[3], torch.zeros_like(before[0]), before[0]])
    want_o, want_s = fused_recurrent_gated_delta_rule(
        x.q, x.k, x.v, x.g, x.beta, initial_state=start, output_final_state=True, backend="torch"
    )
    assert want_s is not None
    assert rms_rel(o, want_o) <= 1e-6
    assert rms_rel(cache[3], want_s[0]) <= 1e-6
    assert rms_rel(cache[0], want_s[2]) <= 1e-6
    for untouched in (1, 2, 4):  # the negative slot wrote nothing; free slots kept their data
        assert torch.equal(cache[untouched], before[untouched])


def test_recurrent_kernel_packed_decode() -> None:
    x = make_gdn_inputs(1, 5, 2, 2, 8, 8, seed=4, N=3)
    cu = torch.tensor([0, 1, 3, 5], dtype=torch.int32)
    ro, rs = _oracle(x, cu_seqlens=cu, use_qk_l2norm=True)
    y = _on_device(x)
    o, s = fused_recurrent_gated_delta_rule(
        y.q, y.k, y.v, y.g, y.beta, initial_state=y.h0, output_final_state=True,
        cu_seqlens=cu.to(DEVICE), use_qk_l2norm=True, backend="triton",
    )  # fmt: skip
    assert s is not None
    assert rms_rel(o.cpu(), ro) <= 1e-5
    assert rms_rel(s.cpu(), rs) <= 1e-5


def test_triton_and_torch_paths_agree_for_bf16_inputs() -> None:
    x = make_gdn_inputs(1, 66, 1, 1, 16, 16, seed=5)
    y = GDNInputs(*(t.to(DEVICE, torch.bfloat16) for t in x.tensors()[:5]), x.h0.to(DEVICE).float())
    results = [
        chunk_gated_delta_rule(
            y.q,
            y.k,
            y.v,
            y.g,
            y.beta,
            initial_state=y.h0,
            output_final_state=True,
            backend=backend,
        )
        for backend in ("triton", "torch")
    ]
    (o1, s1), (o2, s2) = results
    assert o1.dtype == torch.bfloat16
    assert s1 is not None
    assert s2 is not None
    assert rms_rel(s1, s2) <= 1e-6
    assert rms_rel(o1, o2) <= 1e-2


@torch.no_grad()
def test_patched_model_on_the_triton_backend_matches_the_torch_backend() -> None:
    transformers = pytest.importorskip("transformers")
    from hybrid_numerics import patch_qwen3_5

    from .conftest import cache_kwargs, tiny_qwen3_5_config

    torch.manual_seed(0)
    model = transformers.Qwen3_5ForCausalLM(tiny_qwen3_5_config()).eval().to(DEVICE)
    ids = torch.randint(0, 96, (1, 68), device=DEVICE)
    logits = {}
    for backend in ("triton", "torch"):
        patch_qwen3_5(model, backend=backend)
        cache = transformers.DynamicCache(config=model.config)
        steps = [model(ids[:, :66], use_cache=True, **cache_kwargs(model, cache)).logits]
        steps += [
            model(ids[:, t : t + 1], use_cache=True, **cache_kwargs(model, cache)).logits
            for t in (66, 67)
        ]
        logits[backend] = torch.cat(steps, dim=1)
    assert rms_rel(logits["triton"], logits["torch"]) <= 1e-5


def test_decode_grid_puts_sequences_times_heads_on_axis_0() -> None:
    from hybrid_numerics._triton_api import GRID_YZ_LIMIT, decode_grid

    grid = decode_grid(4096, 32, 128, 32)
    assert grid == (4096 * 32, 4)
    assert grid[1] <= GRID_YZ_LIMIT < grid[0]  # axis 1 would not have taken 131,072 programs


def test_recurrent_kernel_with_a_cache_returns_the_final_states() -> None:
    """Consistent returns: a cached Triton decode step returns the final states (every row,
    also for a negative slot) like the torch path, besides updating the cache in place."""
    x = _on_device(make_gdn_inputs(3, 2, 1, 2, 16, 8, seed=3))
    cache = torch.randn(4, 2, 16, 8, device=DEVICE)
    slots = torch.tensor([2, -1, 0], device=DEVICE)
    results = {}
    for backend in ("triton", "torch"):
        pool = cache.clone()
        o, s = fused_recurrent_gated_delta_rule(
            x.q, x.k, x.v, x.g, x.beta, state_cache=pool, state_indices=slots,
            output_final_state=True, backend=backend,
        )  # fmt: skip
        assert s is not None
        assert s.is_contiguous()
        assert s.shape == (3, 2, 16, 8)
        assert torch.equal(pool[2], s[0])
        assert torch.equal(pool[0], s[2])
        results[backend] = (o, s, pool)
    (o1, s1, p1), (o2, s2, p2) = results["triton"], results["torch"]
    assert rms_rel(o1, o2) <= 1e-6
    assert rms_rel(s1, s2) <= 1e-6
    assert rms_rel(p1, p2) <= 1e-6


@pytest.mark.slow
@torch.no_grad()
def test_decode_launches_4096_sequences_at_hv_32() -> None:
    """131,072 programs (N * HV on grid axis 0); K = V = 2 keeps each tiny. Slow under the
    interpreter (it runs programs one by one in Python: ~37 ms each on the loaded 2-core CI
    machine, so ~1 h); seconds on a GPU, where axis 1 would have refused the launch."""
    N, H, HV, K, V = 4096, 16, 32, 2, 2
    x = _on_device(make_gdn_inputs(N, 1, H, HV, K, V, seed=8))
    cache = torch.zeros(N, HV, K, V, device=DEVICE)
    o, s = fused_recurrent_gated_delta_rule(
        x.q, x.k, x.v, x.g, x.beta, state_cache=cache, state_indices=torch.arange(N, device=DEVICE),
        output_final_state=True, backend="triton",
    )  # fmt: skip
    want_o, want_s = fused_recurrent_gated_delta_rule(
        x.q, x.k, x.v, x.g, x.beta, output_final_state=True, backend="torch"
    )
    assert s is not None
    assert want_s is not None
    assert rms_rel(o, want_o) <= 1e-6
    assert rms_rel(cache, want_s) <= 1e-6
