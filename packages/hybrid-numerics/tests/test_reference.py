"""The float64 oracle checked against closed forms it must reproduce (it is the bar for all else)."""

from __future__ import annotations

import torch

from hybrid_numerics.reference import l2norm, reference_gated_delta_rule

from .conftest import make_gdn_inputs, rms_rel


def test_orthonormal_keys_with_full_write_store_values_exactly() -> None:
    # beta = 1 and no decay: the delta rule overwrites the value stored under each (orthogonal)
    # key, so reading with q = k_i returns v_i once k_i has been written.
    K = V = 8
    keys = torch.linalg.qr(torch.randn(K, K, dtype=torch.float64))[0].T  # rows orthonormal
    values = torch.randn(K, V, dtype=torch.float64)
    q = k = keys.reshape(1, K, 1, K)
    v = values.reshape(1, K, 1, V)
    zeros, ones = (
        torch.zeros(1, K, 1, dtype=torch.float64),
        torch.ones(1, K, 1, dtype=torch.float64),
    )
    o, state = reference_gated_delta_rule(q, k, v, zeros, ones, scale=1.0, output_final_state=True)
    assert state is not None
    torch.testing.assert_close(o[0, :, 0], values)
    torch.testing.assert_close(state[0, 0], keys.T @ values)


def test_beta_zero_only_decays_the_initial_state() -> None:
    x = make_gdn_inputs(2, 9, 1, 2, 4, 3)
    beta = torch.zeros_like(x.beta)
    o, state = reference_gated_delta_rule(
        x.q, x.k, x.v, x.g, beta, scale=0.5, initial_state=x.h0, output_final_state=True
    )
    decay = x.g.cumsum(1).exp()  # [B, T, HV]
    q = x.q.repeat_interleave(2, dim=2) * 0.5
    expected = torch.einsum("bthk,bhkv,bth->bthv", q, x.h0, decay)
    assert state is not None
    torch.testing.assert_close(o, expected)
    torch.testing.assert_close(state, x.h0 * decay[:, -1, :, None, None])


def test_grouped_heads_equal_explicitly_repeated_heads() -> None:
    x = make_gdn_inputs(1, 7, 2, 6, 4, 5)
    grouped = reference_gated_delta_rule(x.q, x.k, x.v, x.g, x.beta, initial_state=x.h0)[0]
    q, k = (t.repeat_interleave(3, dim=2) for t in (x.q, x.k))
    repeated = reference_gated_delta_rule(q, k, x.v, x.g, x.beta, initial_state=x.h0)[0]
    torch.testing.assert_close(grouped, repeated)


def test_packed_sequences_equal_separate_runs() -> None:
    x = make_gdn_inputs(1, 10, 1, 2, 4, 3, N=3)
    cu = torch.tensor([0, 3, 4, 10])
    o, state = reference_gated_delta_rule(
        x.q, x.k, x.v, x.g, x.beta, initial_state=x.h0, output_final_state=True, cu_seqlens=cu
    )
    assert state is not None
    for n, (s, e) in enumerate(zip(cu[:-1].tolist(), cu[1:].tolist(), strict=True)):
        part = (t[:, s:e] for t in (x.q, x.k, x.v, x.g, x.beta))
        o_n, s_n = reference_gated_delta_rule(
            *part, initial_state=x.h0[n : n + 1], output_final_state=True
        )
        assert s_n is not None
        torch.testing.assert_close(o[:, s:e], o_n)
        torch.testing.assert_close(state[n], s_n[0])


def test_l2norm_gives_unit_vectors() -> None:
    x = torch.randn(5, 16, dtype=torch.float64) * 3
    assert rms_rel(l2norm(x).norm(dim=-1), torch.ones(5)) < 1e-6
