"""The state behind the HTTP routes: one :class:`TorchEngine`, its pause state, the weight
update in progress and the counters ``/metrics`` exposes (Arctic-SWE §3.3)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch

from arctic_swe.engine import Generation, RefreshError, RequestError, TorchEngine
from arctic_swe.serve._weights import WeightFileError, load_weight_file, tied_spec, weight_spec
from load_router import GenerateRequest

PauseMode = Literal["abort", "wait", "keep"]


class ProtocolError(ValueError):
    """A call out of protocol order or with a bad argument (HTTP 400); nothing changed."""


class PausedError(RuntimeError):
    """The engine is paused in ``abort`` or ``wait`` mode: new requests are refused (503,
    retryable) until ``/resume``."""


@dataclass
class Counters:
    """Monotone counters for ``/metrics``."""

    requests: int = 0
    request_errors: int = 0
    aborted: int = 0
    refreshes: int = 0
    refresh_seconds: float = 0.0
    refused_updates: int = 0


@dataclass
class _Update:
    """A weight update between ``/start_weight_update`` and ``/finish_weight_update``."""

    staged: dict[str, torch.Tensor] | None = None
    started: float = field(default_factory=time.perf_counter)


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
        self.update: _Update | None = None
        self.transfer_initialised = False
        self._spec = weight_spec(model)
        self._tied = tied_spec(model)
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
        applied at the next weight update (every cache invalidated, mid-turn sequences
        re-prefilled)."""
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

    # ------------------------------------------------------------------ weight transfer
    def init_transfer(self, init_info: dict[str, object]) -> None:
        backend = init_info.get("backend", "checkpoint")
        if backend not in ("checkpoint", "file"):
            raise ProtocolError(
                f"weight-transfer backend {backend!r} is not served here: this engine loads "
                "checkpoint-format safetensors files (update_info.weights_path)"
            )
        self.transfer_initialised = True

    def start_update(self) -> None:
        self.update = _Update()

    async def update_weights(self, weights_path: str) -> None:
        """Read and validate the file into the staged update (the served weights are not
        touched until ``/finish_weight_update``)."""
        if self.update is None:
            raise ProtocolError("call /start_weight_update before /update_weights")
        try:
            staged = await asyncio.to_thread(load_weight_file, weights_path, self._spec, self._tied)
        except WeightFileError as exc:
            self.counters.refused_updates += 1
            raise ProtocolError(f"update_weights refused, old weights kept: {exc}") from exc
        self.update.staged = staged

    async def finish_update(self, weight_version: str | None) -> None:
        """Swap the staged weights in as ``weight_version`` (a decimal policy version newer
        than the current one) between two engine steps."""
        update = self.update
        if update is None or update.staged is None:
            raise ProtocolError("no weights staged: call /start_weight_update, /update_weights")
        version = self._parse_version(weight_version)
        async with self._update_lock:
            try:
                await self.engine.refresh_weights(
                    update.staged, version, invalidate_caches=self.clear_cache
                )
            except RefreshError as exc:
                self.counters.refused_updates += 1
                raise ProtocolError(str(exc)) from exc
            finally:
                self.update = None
        self.counters.refreshes += 1
        self.counters.refresh_seconds += time.perf_counter() - update.started

    def _parse_version(self, label: str | None) -> int:
        if label is None:
            return self.engine.version + 1
        try:
            version = int(label)
        except ValueError:
            raise ProtocolError(f"weight_version {label!r} is not a decimal version") from None
        if version <= self.engine.version:
            raise ProtocolError(
                f"weight_version {version} is not newer than the served {self.engine.version}"
            )
        return version

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
            ("refreshes_total", "counter", "weight updates applied", self.counters.refreshes),
            ("refresh_seconds_total", "counter", "seconds from start to finish of the updates", self.counters.refresh_seconds),
            ("refused_updates_total", "counter", "weight updates refused", self.counters.refused_updates),
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
