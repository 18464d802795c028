"""The state behind the HTTP routes: one :class:`TorchEngine`, its pause state, the weight
update in progress and the counters ``/metrics`` exposes (Arctic-SWE §3.3)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch

from arctic_swe.engine import Generation, RequestError, TorchEngine
from arctic_swe.serve._transfer import ProtocolError, WeightRoutes
from load_router import GenerateRequest

PauseMode = Literal["abort", "wait", "keep"]


class PausedError(RuntimeError):
    """The engine is paused in ``abort`` or ``wait`` mode: new requests are refused (503,
    retryable) until ``/resume``."""


@dataclass
class Counters:
    """Monotone counters for ``/metrics``."""

    requests: int = 0
    request_errors: int = 0
    aborted: int = 0


class EngineServer:
    """One torch engine behind the protocol. Every method runs on the server's event loop."""

    def __init__(self, engine: TorchEngine, model: torch.nn.Module, *, model_name: str) -> None:
        config: Any = model.config  # a transformers config
        self.engine = engine
        self.model_name = model_name
        self.vocab_size = int(config.vocab_size)
        self.max_model_len = engine.config.max_seq_len or int(config.max_position_embeddings)
        self.counters = Counters()
        self.mode: PauseMode | None = None
        self.clear_cache = True
        self.weights = WeightRoutes(engine, model)
        self._tasks: set[asyncio.Task[Generation]] = set()
        self._update_lock = asyncio.Lock()

    # ------------------------------------------------------------------ generation
    async def generate(
        self,
        prompt: tuple[int, ...],
        max_tokens: int,
        *,
        seed: int | None,
        stop_token_ids: Sequence[int] | None,
    ) -> Generation:
        """One completion; :class:`RequestError` on bad input, :class:`PausedError` while
        paused in abort/wait mode. A request ended by ``/pause?mode=abort`` returns its
        partial turn (finish reason ``"cancelled"``, ``"abort"`` on the wire), as vLLM's."""
        if self.mode in ("abort", "wait"):
            raise PausedError(f"engine paused (mode={self.mode}); retry after /resume")
        ids: Any = prompt  # attrs' tuple converter confuses mypy's generics
        request = GenerateRequest(rollout_index=0, prompt_ids=ids, max_new_tokens=max_tokens)
        task = asyncio.ensure_future(
            self.engine.generate_detailed(request, stop_token_ids=stop_token_ids, seed=seed)
        )
        self._tasks.add(task)
        try:
            await asyncio.wait({task})
        finally:
            self._tasks.discard(task)
            if not task.done():  # the HTTP handler itself was cancelled (client gone)
                task.cancel()
        return task.result()

    # ------------------------------------------------------------------ pause / resume
    async def pause(self, mode: str, clear_cache: bool) -> None:
        """vLLM's pause: ``keep`` freezes running sequences and queues new ones; ``wait``
        refuses new requests and returns once the running ones finished; ``abort`` refuses
        new requests and ends the running ones at once, each answered with the tokens it
        has so far and ``finish_reason: "abort"`` (vLLM 0.33's semantics). ``clear_cache`` is
        applied at the next weight change made while paused (every cache invalidated,
        mid-turn sequences re-prefilled): :attr:`invalidate_on_update`."""
        if mode not in ("abort", "wait", "keep"):
            raise ProtocolError(f"pause mode must be abort, wait or keep, got {mode!r}")
        self.mode = mode  # type: ignore[assignment]  # checked just above
        self.clear_cache = clear_cache
        if mode == "abort":
            self.counters.aborted += await self.engine.abort()
        if mode == "wait":
            while self._tasks:
                await asyncio.wait(set(self._tasks))
        self.engine.pause()

    def resume(self) -> None:
        self.mode = None
        self.engine.resume()

    @property
    def paused(self) -> bool:
        return self.mode is not None

    @property
    def invalidate_on_update(self) -> bool:
        """Whether a weight change now drops every cache: vLLM resets its caches (running
        requests included) when a pause with ``clear_cache`` completes, so a change made in
        such a pause samples every later token from recomputed caches; one made unpaused or in
        a ``clear_cache=false`` pause leaves the caches (the stale-cache ablation)."""
        return self.paused and self.clear_cache

    # ------------------------------------------------------------------ monitoring
    def metrics_text(self) -> str:
        """Prometheus text exposition of the engine's counters and gauges."""
        core = self.engine.counters
        samples: list[tuple[str, str, str, float]] = [
            ("requests_total", "counter", "completion requests received", self.counters.requests),
            ("request_errors_total", "counter", "requests refused (4xx)", self.counters.request_errors),
            ("requests_aborted_total", "counter", "requests aborted by a pause", self.counters.aborted),
            ("generated_tokens_total", "counter", "tokens sampled", core.generated_tokens),
            ("prefilled_tokens_total", "counter", "tokens prefilled", core.prefilled_tokens),
            ("reused_prompt_tokens_total", "counter", "prompt tokens from a parked cache", core.reused_prompt_tokens),
            ("decode_steps_total", "counter", "batched decode forwards", core.decode_steps),
            ("prefill_forwards_total", "counter", "batched prefill forwards", core.prefill_forwards),
            ("requests_in_flight", "gauge", "completions queued or decoding", self.engine.in_flight),
            ("resident_sequences", "gauge", "sequences holding a cache slot", self.engine.resident),
            ("refreshes_total", "counter", "weight updates applied", self.weights.refreshes),
            ("refresh_seconds_total", "counter", "seconds from start to finish of the updates", self.weights.refresh_seconds),
            ("refused_updates_total", "counter", "weight updates refused", self.weights.refused),
            ("weight_version", "gauge", "policy version of the served weights", self.engine.version),
            ("paused", "gauge", "1 while paused", float(self.paused)),
        ]  # fmt: skip
        lines = [
            "# HELP arctic_engine_info engine identity",
            "# TYPE arctic_engine_info gauge",
            f'arctic_engine_info{{engine_id="{self.engine.engine_id}"}} 1',
        ]
        for name, kind, help_text, value in samples:
            lines += [
                f"# HELP arctic_engine_{name} {help_text}",
                f"# TYPE arctic_engine_{name} {kind}",
                f"arctic_engine_{name} {value}",
            ]
        return "\n".join(lines) + "\n"

    def check_prompt(self, prompt: tuple[int, ...]) -> None:
        """Refuse a prompt the engine cannot take, before it is queued."""
        vocab = self.vocab_size
        bad = [t for t in prompt if not 0 <= t < vocab]
        if bad:
            raise RequestError(f"token ids outside the vocabulary [0, {vocab}): {bad[:5]}")
        if len(prompt) >= self.max_model_len:
            raise RequestError(
                f"prompt of {len(prompt)} tokens does not fit the context of "
                f"{self.max_model_len} (max_model_len) with one token to sample"
            )
