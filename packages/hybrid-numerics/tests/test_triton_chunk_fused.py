"""The fused Triton chunk forward (intra-chunk WY, state scan and output kernels) against the
float64 oracle - on CUDA, or on CPU under TRITON_INTERPRET=1 (set by conftest without a GPU).

Forward-only calls (no input requires grad) take the fused kernels; shapes are tiny because
the interpreter runs every program in Python, but cover grouped value heads, the initial state
on and off, T not a multiple of the chunk (64), masked K and V blocks, strong decay, bf16
inputs, packed sequences of ragged lengths processed without padding, and state-cache slots.
"""

from __future__ import annotations

import dataclasses
import itertools
import os

import pytest
import torch

from hybrid_numerics import chunk_gated_delta_rule, reference_gated_delta_rule

from .conftest import GDNInputs, make_gdn_inputs, require_triton, rms_rel

require_triton()
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
pytestmark = pytest.mark.skipif(
    DEVICE == "cpu" and os.environ.get("TRITON_INTERPRET") != "1",
    reason="no CUDA and TRITON_INTERPRET is not set",
)
TOL = 1e-5  # FP32 vs float64, RMS-relative (measured: ~1e-7)

CASES = {
    # name: (B, T, H, HV, K, V, cu_seqlens, with_h0, l2norm, strong_decay)
    "grouped-h0-partial-chunk": (2, 70, 1, 2, 16, 8, None, True, True, False),
    "no-h0-masked-k-v": (1, 130, 2, 2, 12, 24, None, False, False, False),
    "strong-decay": (1, 100, 1, 2, 16, 16, None, True, True, True),
    "varlen-ragged": (1, 150, 2, 4, 16, 16, (0, 1, 65, 69, 150), True, True, False),
    "varlen-no-h0": (1, 90, 1, 3, 16, 8, (0, 64, 90), False, True, False),
}


def _case_inputs(case: str) -> tuple[GDNInputs, torch.Tensor | None, dict[str, object]]:
    B, T, H, HV, K, V, cu, _, l2, strong = CASES[case]
    n_seq = None if cu is None else len(cu) - 1
    x = make_gdn_inputs(B, T, H, HV, K, V, seed=T + K + V, N=n_seq)
    if not l2:  # keys of norm ~1 keep the rule contractive
        x = dataclasses.replace(x, k=x.k / K**0.5)
    if strong:  # decays down to e^-20 per token: most in-chunk factors underflow to 0
        x = dataclasses.replace(x, g=x.g * 20.0)
    cu_t = None if cu is None else torch.tensor(cu, dtype=torch.int32)
    return x, cu_t, {"use_qk_l2norm": l2}


def _on_device(x: GDNInputs, dtype: torch.dtype = torch.float32) -> GDNInputs:
    return GDNInputs(*(t.to(DEVICE, dtype) for t in x.tensors()[:5]), x.h0.to(DEVICE).float())


@pytest.mark.parametrize("case", list(CASES))
def test_fused_forward_matches_float64(case: str) -> None:
    x, cu, kw = _case_inputs(case)
    with_h0 = CASES[case][7]
    h0 = x.h0 if with_h0 else None
    ro, rs = reference_gated_delta_rule(
        x.q, x.k, x.v, x.g, x.beta, initial_state=h0, output_final_state=True, cu_seqlens=cu,
        **kw,  # type: ignore[arg-type]
    )  # fmt: skip
    y = _on_device(x)
    o, s = chunk_gated_delta_rule(
        y.q, y.k, y.v, y.g, y.beta, initial_state=y.h0 if with_h0 else None,
        output_final_state=True, cu_seqlens=None if cu is None else cu.to(DEVICE),
        backend="triton", **kw,  # type: ignore[arg-type]
    )  # fmt: skip
    assert s is not None
    assert rs is not None
    assert o.dtype == torch.float32
    assert s.dtype == torch.float32
    assert s.is_contiguous()
    assert rms_rel(o.cpu(), ro) <= TOL, rms_rel(o.cpu(), ro)
    assert rms_rel(s.cpu(), rs) <= TOL, rms_rel(s.cpu(), rs)


def test_packed_batch_equals_per_sequence_calls() -> None:
    """No padding: each packed sequence gives what a call on that sequence alone gives."""
    x, cu, kw = _case_inputs("varlen-ragged")
    y = _on_device(x)
    o, s = chunk_gated_delta_rule(
        y.q, y.k, y.v, y.g, y.beta, initial_state=y.h0, output_final_state=True,
        cu_seqlens=cu.to(DEVICE) if cu is not None else None, backend="triton", **kw,  # type: ignore[arg-type]
    )  # fmt: skip
    assert cu is not None
    assert s is not None
    bounds = cu.tolist()
    for n, (a, b) in enumerate(itertools.pairwise(bounds)):
        part = [t[:, a:b].contiguous() for t in (y.q, y.k, y.v, y.g, y.beta)]
        o_n, s_n = chunk_gated_delta_rule(
            *part, initial_state=y.h0[n : n + 1].contiguous(), output_final_state=True,
            backend="triton", **kw,  # type: ignore[arg-type]
        )  # fmt: skip
        assert s_n is not None
        assert rms_rel(o[:, a:b], o_n) <= 1e-6
        assert rms_rel(s[n : n + 1], s_n) <= 1e-6


def test_final_state_feeds_the_next_call() -> None:
    """The returned state is contiguous and its own tensor: accepted as ``initial_state``, and
    two halves give the whole sequence's result."""
    x = _on_device(make_gdn_inputs(1, 128, 1, 2, 16, 16, seed=11))
    whole_o, whole_s = chunk_gated_delta_rule(
        x.q, x.k, x.v, x.g, x.beta, initial_state=x.h0, output_final_state=True,
        use_qk_l2norm=True, backend="triton",
    )  # fmt: skip
    halves = [[t[:, a:b].contiguous() for t in x.tensors()[:5]] for a, b in ((0, 64), (64, 128))]
    o1, s1 = chunk_gated_delta_rule(*halves[0], initial_state=x.h0, output_final_state=True,
                                    use_qk_l2norm=True, backend="triton")  # fmt: skip
    assert s1 is not None
    assert whole_s is not None
    assert s1.is_contiguous()
    assert s1.untyped_storage().nbytes() == s1.numel() * 4
    o2, s2 = chunk_gated_delta_rule(*halves[1], initial_state=s1, output_final_state=True,
                                    use_qk_l2norm=True, backend="triton")  # fmt: skip
    assert s2 is not None
    assert rms_rel(torch.cat([o1, o2], 1), whole_o) <= 1e-6
    assert rms_rel(s2, whole_s) <= 1e-6


def test_fused_forward_bf16_inputs_keep_an_fp32_state() -> None:
    x = make_gdn_inputs(1, 80, 1, 2, 16, 16, seed=5)
    y = _on_device(x, torch.bfloat16)
    o, s = chunk_gated_delta_rule(y.q, y.k, y.v, y.g, y.beta, initial_state=y.h0,
                                  output_final_state=True, use_qk_l2norm=True, backend="triton")  # fmt: skip
    # The oracle on the same bf16-rounded inputs: only the output's final rounding differs.
    r = GDNInputs(*(t.cpu().double() for t in y.tensors()))
    ro, rs = reference_gated_delta_rule(r.q, r.k, r.v, r.g, r.beta, initial_state=r.h0,
                                        output_final_state=True, use_qk_l2norm=True)  # fmt: skip
    assert o.dtype == torch.bfloat16
    assert s is not None
    assert s.dtype == torch.float32
    assert rms_rel(s.cpu(), rs) <= TOL
    assert rms_rel(o.cpu(), ro) <= 1e-2  # bf16 output rounding (2^-9 relative)


def test_fused_forward_writes_cache_slots_in_place() -> None:
    x = _on_device(make_gdn_inputs(1, 90, 1, 2, 16, 8, seed=6, N=3))
    cu = torch.tensor([0, 20, 70, 90], dtype=torch.int32, device=DEVICE)
    cache = torch.randn(5, 2, 16, 8, device=DEVICE)
    before = cache.clone()
    slots = torch.tensor([4, -1, 1], device=DEVICE)
    o, s = chunk_gated_delta_rule(x.q, x.k, x.v, x.g, x.beta, cu_seqlens=cu, state_cache=cache,
                                  state_indices=slots, output_final_state=True, backend="triton")  # fmt: skip
    start = torch.stack([before[4], torch.zeros_like(before[0]), before[1]])
    want_o, want_s = chunk_gated_delta_rule(x.q, x.k, x.v, x.g, x.beta, cu_seqlens=cu,
                                            initial_state=start, output_final_state=True,
                                            backend="torch")  # fmt: skip
    assert s is not None
    assert want_s is not None
    assert rms_rel(o, want_o) <= 1e-6
    assert rms_rel(s, want_s) <= 1e-6  # returned for every row, the negative slot's too
    assert rms_rel(cache[4], want_s[0]) <= 1e-6
    assert rms_rel(cache[1], want_s[2]) <= 1e-6
    for untouched in (0, 2, 3):
        assert torch.equal(cache[untouched], before[untouched])


def test_chunk_tables_number_chunks_per_sequence_without_padding() -> None:
    from hybrid_numerics._triton_config import chunk_tables

    # The example: one 4096-token sequence and 63 of 16 tokens -> 64 + 63 chunks.
    offsets = [0, 4096, *(4096 + 16 * i for i in range(1, 64))]
    index, starts, total = chunk_tables(offsets, 1, offsets[-1], 64, torch.device("cpu"))
    assert total == 127
    assert index.shape == (127, 2)
    assert starts.tolist()[:3] == [0, 64, 65]
    assert index[63].tolist() == [0, 63]
    assert index[64].tolist() == [1, 0]
    dense_index, dense_starts, dense_total = chunk_tables(None, 2, 70, 64, torch.device("cpu"))
    assert dense_total == 4
    assert dense_index.tolist() == [[0, 0], [0, 1], [1, 0], [1, 1]]
    assert dense_starts.tolist() == [0, 2, 4]
