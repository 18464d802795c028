"""Engine configuration and the per-turn generation record."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import torch

from arctic_swe.engine._errors import EngineError

FinishReason = Literal["stop", "max_tokens", "context", "cancelled"]


@dataclass(frozen=True)
class EngineConfig:
    """How a :class:`TorchEngine` runs.

    * ``engine_id`` — the router's registry key.
    * ``capacity`` — cache slots: the most sequences resident at once (active + parked).
    * ``seed`` — base of the per-request sampling seeds (request ``n`` gets a seed derived from
      ``(seed, n)`` unless the caller passes one).
    * ``stop_token_ids`` — default stop set (the stop token is emitted and recorded).
    * ``max_seq_len`` — context limit (prompt + generated); ``None``: the model's
      ``max_position_embeddings``.
    * ``prefill_chunk`` — the most tokens of one sequence fed in one forward (chunked prefill
      bounds the attention scratch memory of long prompts).
    * ``prefill_token_budget`` — the most padded tokens (rows x longest chunk) in one prefill
      forward; sequences beyond it wait for the next step.
    * ``state_dtype`` — storage precision of the Gated DeltaNet recurrent state between steps:
      ``torch.float32`` (the recipe) or ``torch.bfloat16`` (the "FP32 numerics off" ablation:
      each stored state is rounded, like an engine whose state cache has the model dtype).
    * ``compute_dtype`` — the dtype the engine's forward computes in: ``None`` (default) runs
      the model as given (FP32 on CPU); ``torch.bfloat16`` casts it at construction under
      hybrid-numerics' precision policy (matmul weights and activations bf16; ``A_log``,
      ``dt_bias``, norm gains FP32) — with ``state_dtype=torch.bfloat16``, the CPU form of the
      "FP32 numerics off" ablation (Arctic-SWE §3.3): an engine in the model dtype scoring
      against an FP32 trainer. Refreshed weights are rounded into the engine's dtypes.
    * ``admission_window_s`` — when an idle engine receives a request, how long it waits for
      further arrivals before its first step (the wait restarts on each arrival, capped at 10
      windows), so requests that reach a server within one burst share one prefill forward and
      finish together, as they do in-process. ``0`` (the in-process default): step at once;
      ``arctic-swe serve`` sets it (``--admission-window-ms``). Never applied while sequences
      are decoding: late arrivals then join the next step.
    """

    engine_id: str = "torch-0"
    capacity: int = 64
    seed: int = 0
    stop_token_ids: tuple[int, ...] = ()
    max_seq_len: int | None = None
    prefill_chunk: int = 1024
    prefill_token_budget: int = 8192
    state_dtype: torch.dtype = torch.float32
    admission_window_s: float = 0.0
    compute_dtype: torch.dtype | None = None

    def __post_init__(self) -> None:
        if not self.engine_id:
            raise EngineError("engine_id must be a non-empty string")
        for name in ("capacity", "prefill_chunk", "prefill_token_budget"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise EngineError(f"{name} must be a positive int, got {value!r}")
        if self.max_seq_len is not None and self.max_seq_len < 2:
            raise EngineError(f"max_seq_len must be >= 2, got {self.max_seq_len}")
        if self.prefill_token_budget < self.prefill_chunk:
            raise EngineError("prefill_token_budget must be >= prefill_chunk")
        window = self.admission_window_s
        if not isinstance(window, int | float) or not 0 <= window <= 1.0:
            raise EngineError(f"admission_window_s must be in [0, 1] seconds, got {window!r}")
        if self.state_dtype not in (torch.float32, torch.bfloat16, torch.float16):
            raise EngineError(
                f"state_dtype must be float32, bfloat16 or float16: {self.state_dtype}"
            )
        if self.compute_dtype not in (None, torch.float32, torch.bfloat16, torch.float16):
            raise EngineError(
                f"compute_dtype must be None, float32, bfloat16 or float16: {self.compute_dtype}"
            )
        if any(isinstance(t, bool) or not isinstance(t, int) or t < 0 for t in self.stop_token_ids):
            raise EngineError("stop_token_ids must be non-negative ints")


@dataclass(frozen=True)
class Generation:
    """One sampled turn with everything the trainer needs (ARCHITECTURE.md §6).

    ``token_ids``, ``logprobs`` (log π_rollout of each sampled token under the full-vocabulary
    temperature-1 distribution) and ``versions`` (the policy version each token was sampled
    under) have the same length T. ``cached_prompt_tokens`` is how much of the prompt was
    already resident (a previous turn of the same rollout), ``prefilled_tokens`` how many were
    computed for this call.
    """

    token_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    versions: tuple[int, ...]
    finish_reason: FinishReason
    prompt_tokens: int
    cached_prompt_tokens: int
    queue_seconds: float
    seconds: float
    seed: int
    stop_token_ids: tuple[int, ...] = field(default=())
