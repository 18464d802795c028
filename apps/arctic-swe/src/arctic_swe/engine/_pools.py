"""Per-sequence caches of a Qwen3.5 hybrid model, one slot per resident sequence.

Each Gated DeltaNet layer keeps, per slot, the last ``K - 1`` inputs of its short causal
convolution (``conv [S, K-1, C]``, model dtype: oldest first, channels last, so the decode
step's four-term sum runs over contiguous rows of ``C`` values) and the recurrent state
(``recurrent [S, HV, Dk, Dv]``, held in FP32, Arctic-SWE §3.3 — ``state_dtype=torch.bfloat16``
is the paper's ablation: every stored state is rounded to bf16, as in an engine whose state
cache uses the model dtype); each full-attention layer keeps
keys and values (``[S, H_kv, L, D]``), grown by doubling as sequences get longer. A slot is just
an index: sequences never move, so a batched step gathers its rows with ``index_select``.
"""

from __future__ import annotations

import torch
from transformers import Qwen3_5TextConfig

_MIN_KV_LENGTH = 256


class CachePools:
    """The cache tensors of every layer for ``capacity`` slots."""

    def __init__(
        self,
        config: Qwen3_5TextConfig,
        capacity: int,
        device: torch.device,
        dtype: torch.dtype,
        state_dtype: torch.dtype = torch.float32,
    ) -> None:
        self.capacity = capacity
        self.state_dtype = state_dtype
        self.layer_types: tuple[str, ...] = tuple(config.layer_types or ())
        self.conv: dict[int, torch.Tensor] = {}
        self.recurrent: dict[int, torch.Tensor] = {}
        self.keys: dict[int, torch.Tensor] = {}
        self.values: dict[int, torch.Tensor] = {}
        conv_dim = 2 * config.linear_key_head_dim * config.linear_num_key_heads + (
            config.linear_value_head_dim * config.linear_num_value_heads
        )
        head_dim = config.head_dim or config.hidden_size // config.num_attention_heads
        for index, kind in enumerate(self.layer_types):
            if kind == "linear_attention":
                self.conv[index] = torch.zeros(
                    capacity,
                    config.linear_conv_kernel_dim - 1,
                    conv_dim,
                    device=device,
                    dtype=dtype,
                )
                self.recurrent[index] = torch.zeros(
                    capacity,
                    config.linear_num_value_heads,
                    config.linear_key_head_dim,
                    config.linear_value_head_dim,
                    device=device,
                    dtype=torch.float32,
                )
            else:
                shape = (capacity, config.num_key_value_heads, _MIN_KV_LENGTH, head_dim)
                self.keys[index] = torch.zeros(shape, device=device, dtype=dtype)
                self.values[index] = torch.zeros(shape, device=device, dtype=dtype)

    @property
    def kv_length(self) -> int:
        """Positions the attention caches can hold today (they grow on demand)."""
        first = next(iter(self.keys.values()), None)
        return first.shape[2] if first is not None else 0

    def ensure_length(self, length: int) -> None:
        """Grow every key/value cache (by doubling) to hold ``length`` positions."""
        current = self.kv_length
        if not self.keys or length <= current:
            return
        target = current
        while target < length:
            target *= 2
        for store in (self.keys, self.values):
            for index, old in store.items():
                grown = old.new_zeros(old.shape[0], old.shape[1], target, old.shape[3])
                grown[:, :, :current] = old
                store[index] = grown

    @torch.no_grad()
    def reset(self, slots: list[int]) -> None:
        """Forget the state of ``slots``: zero conv history and recurrent state (attention
        keys/values need no reset — positions at or past a sequence's length are masked)."""
        if not slots:
            return
        index = torch.tensor(slots, dtype=torch.long, device=self.device)
        for store in (self.conv, self.recurrent):
            for tensor in store.values():
                tensor.index_fill_(0, index, 0.0)

    @torch.no_grad()
    def round_states(self, index: int, slots: torch.Tensor) -> None:
        """Round layer ``index``'s stored states of ``slots`` to ``state_dtype`` (in place; a
        no-op for the FP32 default)."""
        if self.state_dtype == torch.float32:
            return
        state = self.recurrent[index]
        rows = state.index_select(0, slots)
        state.index_copy_(0, slots, rows.to(self.state_dtype).to(torch.float32))

    @property
    def device(self) -> torch.device:
        """Where the caches live."""
        tensors = [*self.conv.values(), *self.keys.values()]
        return tensors[0].device

    def nbytes(self) -> int:
        """Bytes held by all cache tensors."""
        stores = (self.conv, self.recurrent, self.keys, self.values)
        return sum(t.numel() * t.element_size() for s in stores for t in s.values())
