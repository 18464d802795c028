"""Dispatch and the in-place state cache as a state machine (an engine's slot pool)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, rule

from hybrid_numerics import (
    GDNInputError,
    chunk_gated_delta_rule,
    fused_recurrent_gated_delta_rule,
    gdn_gate,
    reference_gated_delta_rule,
)
from hybrid_numerics._api import _choose_backend, gather_states, scatter_states

from .conftest import make_gdn_inputs, rms_rel

H, HV, K, V, SLOTS = 1, 2, 8, 4, 4


def test_auto_backend_is_torch_on_cpu_and_explicit_choices_win() -> None:
    x = torch.zeros(1)
    for mode in ("chunk", "recurrent"):
        assert _choose_backend("auto", mode, x) == ("torch", False)
        assert _choose_backend("triton", mode, x) == ("triton", False)
        assert _choose_backend("torch", mode, x) == ("torch", False)
    # The chunk kernels have a backward; the recurrent kernel does not and refuses a gradient.
    w = torch.zeros(1, requires_grad=True)
    assert _choose_backend("triton", "chunk", w) == ("triton", True)
    with pytest.raises(GDNInputError, match="no backward"):
        _choose_backend("triton", "recurrent", w)
    with torch.no_grad():
        assert _choose_backend("triton", "recurrent", w) == ("triton", False)


def test_gather_and_scatter_skip_negative_slots() -> None:
    pool = torch.arange(3 * 2 * 2 * 2, dtype=torch.float32).reshape(3, 2, 2, 2)
    pool[1] = float("nan")
    states = gather_states(pool, torch.tensor([2, -1]), torch.float32)
    assert torch.equal(states[0], pool[2])
    assert torch.count_nonzero(states[1]) == 0
    scatter_states(pool, torch.tensor([-1, 0]), torch.ones(2, 2, 2, 2))
    assert torch.equal(pool[0], torch.ones(2, 2, 2))
    assert torch.isnan(pool[1]).all()


def test_gather_and_scatter_fast_path_when_every_slot_is_live() -> None:
    pool = torch.arange(3 * 2 * 2 * 2, dtype=torch.float32).reshape(3, 2, 2, 2)
    slots = torch.tensor([2, 0], dtype=torch.int32)
    fast = gather_states(pool, slots, torch.float32, all_live=True)
    assert torch.equal(fast, gather_states(pool, slots, torch.float32))
    scatter_states(pool, slots, torch.full((2, 2, 2, 2), 7.0), all_live=True)
    assert (pool[[0, 2]] == 7).all()
    assert torch.equal(pool[1], torch.arange(8, 16, dtype=torch.float32).reshape(2, 2, 2))


class SlotPool(RuleBasedStateMachine):
    """Sequences are admitted (chunk prefill into a free slot), decoded in arbitrary subsets
    (recurrent, one token, in place) and evicted; every live slot must always hold the oracle's
    state for that sequence's full token history."""

    sequences = Bundle("sequences")

    def __init__(self) -> None:
        super().__init__()
        self.pool = torch.full((SLOTS, HV, K, V), float("nan"))
        self.history: dict[int, list[tuple[torch.Tensor, ...]]] = {}
        self.gen = torch.Generator().manual_seed(0)

    def _tokens(self, t: int) -> tuple[torch.Tensor, ...]:
        r = lambda *s: torch.randn(*s, generator=self.gen)  # noqa: E731
        g = torch.nn.functional.logsigmoid(r(1, t, HV))
        return (
            r(1, t, H, K),
            r(1, t, H, K),
            r(1, t, HV, V),
            g,
            torch.rand(1, t, HV, generator=self.gen),
        )

    @rule(target=sequences, length=st.integers(1, 70))
    def admit(self, length: int) -> int:
        free = [s for s in range(SLOTS) if s not in self.history]
        if not free:
            return -1
        slot, tokens = free[0], self._tokens(length)
        self.pool[slot].zero_()  # the contract: a slot handed to a new sequence is zeroed first
        chunk_gated_delta_rule(*tokens, state_cache=self.pool, state_indices=torch.tensor([slot]))
        self.history[slot] = [tokens]
        return slot

    @rule(data=st.data())
    def decode(self, data: st.DataObject) -> None:
        live = sorted(self.history)
        if not live:
            return
        rows = data.draw(st.lists(st.sampled_from(live), min_size=1, unique=True))
        step = [self._tokens(1) for _ in rows]
        batch = [torch.cat(parts) for parts in zip(*step, strict=True)]
        fused_recurrent_gated_delta_rule(
            *batch, state_cache=self.pool, state_indices=torch.tensor(rows)
        )
        for slot, tokens in zip(rows, step, strict=True):
            self.history[slot].append(tokens)

    @rule(slot=consumes(sequences))
    def evict(self, slot: int) -> None:
        self.history.pop(slot, None)

    @invariant()
    def live_slots_hold_the_oracle_state(self) -> None:
        for slot, parts in self.history.items():
            whole = [torch.cat(p, dim=1) for p in zip(*parts, strict=True)]
            _, want = reference_gated_delta_rule(*whole, output_final_state=True)
            assert want is not None
            assert rms_rel(self.pool[slot], want[0]) <= 1e-5


TestSlotPool = SlotPool.TestCase
TestSlotPool.settings = settings(max_examples=15, stateful_step_count=12, deadline=None)


@pytest.mark.parametrize("fn", [chunk_gated_delta_rule, fused_recurrent_gated_delta_rule])
def test_float64_inputs_compute_in_float64(fn: object) -> None:
    x = [torch.randn(1, 5, 1, 4, dtype=torch.float64) for _ in range(2)]
    v = torch.randn(1, 5, 1, 4, dtype=torch.float64)
    g, beta = -torch.rand(1, 5, 1, dtype=torch.float64), torch.rand(1, 5, 1, dtype=torch.float64)
    o, s = fn(*x, v, g, beta, output_final_state=True)  # type: ignore[operator]
    assert o.dtype == torch.float64
    assert s is not None
    assert s.dtype == torch.float64


def _small(seed: int = 0) -> tuple[torch.Tensor, ...]:
    x = make_gdn_inputs(1, 12, 1, 2, 8, 4, seed=seed).cast(torch.float32)
    return x.q, x.k, x.v, x.g, x.beta, x.h0


def test_fla_call_surface_positional_scale_and_kernel_flags() -> None:
    q, k, v, g, beta, h0 = _small()
    want_o, want_s = chunk_gated_delta_rule(
        q, k, v, g, beta, scale=0.3, initial_state=h0, output_final_state=True, use_qk_l2norm=True
    )
    # fla's positional order: q, k, v, g, beta, scale, initial_state, output_final_state
    o, s = chunk_gated_delta_rule(q, k, v, g, beta, 0.3, h0, True, use_qk_l2norm_in_kernel=True)
    assert s is not None
    assert want_s is not None
    assert torch.equal(o, want_o)
    assert torch.equal(s, want_s)
    logits = torch.randn(beta.shape)
    o1, _ = chunk_gated_delta_rule(q, k, v, g, torch.sigmoid(logits))
    o2, _ = chunk_gated_delta_rule(q, k, v, g, logits, use_beta_sigmoid_in_kernel=True)
    assert rms_rel(o2, o1) <= 1e-7
    a = torch.randn(g.shape)
    A_log, dt_bias = torch.tensor([0.5, 2.0]), torch.tensor([0.1, -0.2])
    o3, _ = chunk_gated_delta_rule(q, k, v, a, beta, A_log=A_log, dt_bias=dt_bias,
                                   use_gate_in_kernel=True)  # fmt: skip
    o4, _ = chunk_gated_delta_rule(q, k, v, gdn_gate(a, A_log, dt_bias), beta)
    assert rms_rel(o3, o4) <= 1e-7
    with pytest.raises(GDNInputError, match="use_gate_in_kernel"):
        chunk_gated_delta_rule(q, k, v, a, beta, use_gate_in_kernel=True)
    with pytest.raises(TypeError):  # fla's recurrent order is g, gk, gv, beta: no positional scale
        fused_recurrent_gated_delta_rule(q, k, v, g, beta, 0.3)  # type: ignore[misc]


def test_validate_false_reads_no_index_values() -> None:
    """``validate=False`` skips the host checks of slot values (they cost a sync on CUDA); on
    CPU tensors the default checks them, and ``validate=True`` always does."""
    q, k, v, g, beta, _ = _small()
    pool = torch.zeros(SLOTS, HV, K, V)
    one_slot = torch.tensor([1])
    out_of_range = torch.tensor([SLOTS + 3])
    with pytest.raises(GDNInputError, match="out of range"):
        fused_recurrent_gated_delta_rule(
            q, k, v, g, beta, state_cache=pool, state_indices=out_of_range
        )
    with pytest.raises(GDNInputError, match="out of range"):
        fused_recurrent_gated_delta_rule(q, k, v, g, beta, state_cache=pool,
                                         state_indices=out_of_range, validate=True)  # fmt: skip
    fused_recurrent_gated_delta_rule(q, k, v, g, beta, state_cache=pool, state_indices=one_slot,
                                     validate=False)  # fmt: skip
    assert pool[1].abs().sum() > 0
    assert pool[0].abs().sum() == 0
