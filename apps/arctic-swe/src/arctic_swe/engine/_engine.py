"""``TorchEngine``: load-router's ``Engine`` over an in-process torch model.

All compute runs on the engine's own worker thread, one scheduling step per hop, so the event
loop is never blocked for longer than it takes to enqueue a request; a single driver task owns
the core, so the core is never entered concurrently. Generate calls that arrive while a step
runs join the next step's batch (continuous batching).

One thread for the engine's whole life, which also builds the core (caches) and casts the
weights: with several intra-op threads, every OS thread that runs a parallel torch op owns an
OpenMP team, and libgomp makes each team wait on a futex instead of spinning once it manages
more threads than cores — on 2 cores an engine whose steps wandered over a pool's threads (or
whose caches were zeroed on the caller's thread) ran slower at 2 threads than at 1 (measured,
see the README). The process's other threads should stay single-threaded in torch for the same
reason (the app's loop runs at one thread).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import torch
from torch import nn

from arctic_swe.engine._config import EngineConfig, Generation
from arctic_swe.engine._core import CoreCounters, EngineCore, Job, RefreshStats
from arctic_swe.engine._errors import (
    EngineClosedError,
    EngineError,
    EngineStepFailedError,
    RefreshError,
    RequestError,
)
from arctic_swe.engine._sampling import derive_seed, make_generator
from arctic_swe.model import CheckpointError, PolicyError, read_weights, set_compute_dtype
from load_router import Engine, GenerateRequest, GenerateResult


@runtime_checkable
class RunEngine(Engine, Protocol):
    """An engine a run drives: a :class:`load_router.Engine` (routed, generating, refreshed)
    with an explicit end. Every engine kind implements it (:class:`TorchEngine`,
    :class:`arctic_swe.engine.HttpEngine`); whoever opened an engine awaits :meth:`close`
    once it is done with it."""

    async def close(self) -> None:
        """Release the engine (its thread, its connections); later calls fail with
        :class:`EngineClosedError`. Idempotent; the weights it served are not touched."""
        ...


@dataclass(eq=False)
class _Command:
    """Work on the core that must run between two steps (refresh, forget)."""

    action: Callable[[], object]
    future: asyncio.Future[Any] = field(repr=False)


class TorchEngine:
    """Continuous-batching inference engine for a Qwen3.5 hybrid policy (ARCHITECTURE.md §4).

    Implements :class:`RunEngine`. ``model`` is used in place (the engine owns its
    weights from now on: a refresh overwrites them); it must be a Qwen3.5 causal LM such as
    :func:`arctic_swe.model.build_policy` returns; the caches live on its device. ``version``
    is the policy version of the initial weights. Drive it from one event loop at a time.
    """

    def __init__(self, model: nn.Module, config: EngineConfig | None = None, *, version: int = 0):
        if isinstance(version, bool) or not isinstance(version, int) or version < 0:
            raise RefreshError(f"version must be a non-negative int, got {version!r}")
        self.config = config or EngineConfig()
        self._worker = ThreadPoolExecutor(1, thread_name_prefix=f"engine-{self.config.engine_id}")
        try:
            self._core = self._worker.submit(self._build_core, model, version).result()
        except BaseException:
            self._worker.shutdown()  # a failed construction leaves no thread behind
            raise
        self._inbox: list[Job] = []
        self._commands: list[_Command] = []
        self._futures: dict[Job, asyncio.Future[Generation]] = {}
        self._driver: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self._requests = 0
        self._latest_version = version
        self._closed = False
        self._failure: BaseException | None = None
        self._paused = False
        self.last_refresh: RefreshStats | None = None

    # ------------------------------------------------------------ Engine protocol
    @property
    def engine_id(self) -> str:
        """Stable identity (the router's registry key)."""
        return self.config.engine_id

    @property
    def capacity(self) -> int:
        """Cache slots: the most sequences resident at once."""
        return self.config.capacity

    @property
    def in_flight(self) -> int:
        """Generate calls submitted and not yet finished (queued or decoding)."""
        return len(self._futures)

    @property
    def compute_dtype(self) -> torch.dtype:
        """The dtype of the engine's matmul weights, hence of its forward's activations."""
        weight: torch.Tensor = self._core.model.get_submodule("model.embed_tokens").weight  # type: ignore[assignment]
        return weight.dtype

    @property
    def version(self) -> int:
        """The policy version the engine samples under now."""
        return self._core.version

    @property
    def resident(self) -> int:
        """Sequences holding a cache slot (decoding or parked between turns)."""
        return len(self._core.residents)

    @property
    def counters(self) -> CoreCounters:
        """Monotone counters (tokens generated / prefilled / reused, steps, evictions)."""
        return self._core.counters

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        """Sample one turn for ``request`` (load-router's contract).

        ``token_versions`` carries the version each token was sampled under (a refresh that
        lands while the turn decodes changes it inside the turn); ``policy_version`` is the
        newest token's. Use :meth:`generate_detailed` for the full record.
        """
        turn = await self.generate_detailed(request)
        ids: Any = turn.token_ids  # attrs' tuple converter confuses mypy's generics
        logprobs: Any = turn.logprobs
        versions: Any = turn.versions
        newest = turn.versions[-1] if turn.versions else self.version
        return GenerateResult(
            token_ids=ids, logprobs=logprobs, policy_version=newest, token_versions=versions
        )

    async def generate_detailed(
        self,
        request: GenerateRequest,
        *,
        stop_token_ids: Iterable[int] | None = None,
        seed: int | None = None,
    ) -> Generation:
        """Sample one turn and return the full record (per-token log-probs and versions,
        finish reason, prefix reuse, latencies).

        ``stop_token_ids`` overrides the engine's default stop set; ``seed`` (else
        ``request.seed``) fixes the turn's sampling stream (default: derived from the engine
        seed and a request counter).
        Raises :class:`RequestError` on a bad request, before any work is queued.
        """
        job = self._make_job(request, stop_token_ids, seed)
        future: asyncio.Future[Generation] = asyncio.get_running_loop().create_future()
        self._futures[job] = future
        self._inbox.append(job)
        self._kick()
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            # The caller is gone: it no longer counts as in flight (the router's view), and the
            # core drops the job at its next step, which frees the cache slot.
            job.cancelled = True
            self._futures.pop(job, None)
            raise

    async def refresh(
        self, weights_ref: str, version: int, *, invalidate_caches: bool = True
    ) -> None:
        """Load the checkpoint at ``weights_ref`` (a Hugging Face checkpoint directory or a
        ``.safetensors`` file) as ``version``; see :meth:`refresh_weights`."""
        if not isinstance(weights_ref, str) or not weights_ref:
            raise RefreshError(f"weights_ref must be a path string, got {weights_ref!r}")
        await self.refresh_weights(weights_ref, version, invalidate_caches=invalidate_caches)

    async def refresh_weights(
        self,
        weights: str | Mapping[str, torch.Tensor],
        version: int,
        *,
        invalidate_caches: bool = True,
    ) -> RefreshStats:
        """Load new weights (a path, or a state dict from an in-process trainer) and sample
        under ``version`` from the next step on.

        With ``invalidate_caches`` (the default, paper §3.3) every cache — attention keys and
        values, convolution history, FP32 recurrent state — is dropped: a sequence in mid-turn
        has its history re-prefilled under the new weights before it samples again, a parked
        sequence is released (its next turn, if any, is prefilled afresh). ``invalidate_caches=False`` is the stale-cache ablation. Runs between
        two steps, so it is safe even while generate calls are in flight. Raises
        :class:`RefreshError` (engine unchanged) on a non-increasing version or weights that
        do not fit the model.
        """
        self._claim_version(version)

        def action() -> RefreshStats:
            try:
                loaded = read_weights(weights) if isinstance(weights, str) else weights
                return self._core.refresh(loaded, version, invalidate_caches)
            except CheckpointError as exc:
                raise RefreshError(f"refresh to version {version}: {exc}") from exc

        try:
            stats: RefreshStats = await self._submit(action)
        except RefreshError:
            if self._latest_version == version:  # no newer refresh was queued meanwhile
                self._latest_version = self._core.version
            raise
        self.last_refresh = stats
        return stats

    def _claim_version(self, version: int) -> None:
        """Reserve ``version`` for a weight change or relabel queued now (it must be newer than
        every one queued before): :class:`RefreshError` otherwise, engine unchanged."""
        self._check_open()
        if isinstance(version, bool) or not isinstance(version, int):
            raise RefreshError(f"version must be an int, got {version!r}")
        if version <= self._latest_version:
            raise RefreshError(f"version {version} is not newer than {self._latest_version}")
        self._latest_version = version

    async def relabel(self, version: int) -> None:
        """Sample under ``version`` from the next step on without touching the weights (a
        server relabelling what it serves: vLLM's ``/update_weight_version``). Tokens
        already sampled keep the version they were sampled under."""
        self._claim_version(version)
        core = self._core

        def action() -> None:
            core.version = version

        await self._submit(action)

    @property
    def paused(self) -> bool:
        """Whether scheduling is frozen (:meth:`pause`)."""
        return self._paused

    def pause(self) -> None:
        """Freeze every sequence where it is after the current step (vLLM's
        ``pause(mode="keep")``): no token is sampled until :meth:`resume`; generate calls are
        still accepted and queued, and refreshes still run. Idempotent."""
        self._paused = True

    def resume(self) -> None:
        """Continue after :meth:`pause`. Idempotent."""
        self._paused = False
        if self._driver is not None or self._inbox:
            self._kick()

    async def abort(self) -> int:
        """End every queued and running generate call now (vLLM's ``pause(mode="abort")``):
        each returns its partial turn — the tokens, log-probs and versions sampled so far —
        with finish reason ``"cancelled"``; the slots keep the computed history, so the
        rollout's continuation (the partial turn appended to its prompt) is not recomputed.
        Runs between two steps, also while paused. Returns how many calls it ended."""
        queued, self._inbox = self._inbox, []
        aborted: list[Job] = await self._submit(lambda: self._core.abort_all(queued))
        for job in aborted:
            future = self._futures.pop(job, None)
            if future is not None:
                _settle(future, result=job.generation())
        return len(aborted)

    async def forget(self, token_ids: Iterable[int]) -> int:
        """Drop the parked cache of a finished rollout (history a prefix of ``token_ids``);
        returns how many slots were freed. Optional: parked slots are also evicted LRU."""
        tokens = tuple(token_ids)
        freed: int = await self._submit(lambda: self._core.forget(tokens))
        return freed

    async def close(self) -> None:
        """Stop the driver after its current step; pending calls fail with
        :class:`EngineClosedError`. Idempotent."""
        self._closed = True
        self._kick()
        if self._driver is not None:
            await asyncio.gather(self._driver, return_exceptions=True)
        self._fail_all(EngineClosedError(f"engine {self.engine_id} closed"))
        self._worker.shutdown()  # the driver is done: the idle thread exits at once

    # ------------------------------------------------------------------ internals
    def _build_core(self, model: nn.Module, version: int) -> EngineCore:
        """On the worker thread: cast the weights (if asked), then allocate the caches."""
        if self.config.compute_dtype is not None:  # before the caches take the model's dtype
            try:
                set_compute_dtype(model, self.config.compute_dtype)
            except PolicyError as exc:
                raise EngineError(str(exc)) from exc
        return EngineCore(model, self.config, version)

    def _make_job(
        self, request: GenerateRequest, stop_token_ids: Iterable[int] | None, seed: int | None
    ) -> Job:
        self._check_open()
        if not isinstance(request, GenerateRequest):
            raise RequestError(f"expected a GenerateRequest, got {type(request).__name__}")
        seed = request.seed if seed is None else seed
        prompt = request.prompt_ids
        if not prompt:
            raise RequestError("prompt_ids is empty: the engine needs at least one token")
        if max(prompt) >= self._core.vocab_size:
            raise RequestError(f"token id {max(prompt)} >= vocab size {self._core.vocab_size}")
        if len(prompt) >= self._core.max_seq_len:
            raise RequestError(
                f"prompt of {len(prompt)} tokens leaves no room under max_seq_len "
                f"{self._core.max_seq_len}"
            )
        stops = self.config.stop_token_ids if stop_token_ids is None else tuple(stop_token_ids)
        if any(isinstance(t, bool) or not isinstance(t, int) for t in stops) or any(
            not 0 <= t < self._core.vocab_size for t in stops
        ):
            raise RequestError(f"stop_token_ids {stops} not all in [0, {self._core.vocab_size})")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise RequestError(f"seed must be a non-negative int, got {seed!r}")
        self._requests += 1
        chosen = derive_seed(self.config.seed, self._requests) if seed is None else seed
        return Job(
            prompt=prompt,
            max_new_tokens=request.max_new_tokens,
            stop=frozenset(stops),
            seed=chosen,
            generator=make_generator(chosen),
        )

    def _check_open(self) -> None:
        if self._failure is not None:
            raise EngineStepFailedError(f"engine {self.engine_id} failed: {self._failure!r}")
        if self._closed:
            raise EngineClosedError(f"engine {self.engine_id} is closed")

    def _kick(self) -> None:
        idle = self._driver is None or self._driver.done()
        if idle and not self._closed and self._failure is None:
            # A fresh event per driver: an asyncio.Event binds to the loop that first awaits it,
            # and a caller may drive the engine from a new loop once the old one has ended.
            self._wake = asyncio.Event()
            self._driver = asyncio.get_running_loop().create_task(self._drive())
        if self._wake is not None:
            self._wake.set()

    async def _submit(self, action: Callable[[], object]) -> Any:
        self._check_open()
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._commands.append(_Command(action, future))
        self._kick()
        return await asyncio.shield(future)

    async def _drive(self) -> None:
        assert self._wake is not None
        while not self._closed:
            stepping = not self._paused
            if not (self._commands or (stepping and (self._inbox or self._core.has_work()))):
                self._wake.clear()
                await self._wake.wait()
                continue
            if stepping and self._inbox and not self._commands and not self._core.has_work():
                await self._await_burst()
            commands, self._commands = self._commands, []
            jobs: list[Job] = []
            if stepping:
                jobs, self._inbox = self._inbox, []
            try:
                outcomes, finished = await asyncio.get_running_loop().run_in_executor(
                    self._worker, self._step, commands, jobs, stepping
                )
            except Exception as exc:  # a broken step: fail everything, refuse further work
                self._failure = exc
                error = EngineStepFailedError(f"engine {self.engine_id} step failed: {exc!r}")
                for command in commands:
                    _settle(command.future, exc=error)
                self._fail_all(error)
                return
            for command, (ok, value) in zip(commands, outcomes, strict=True):
                _settle(command.future, result=value) if ok else _settle(command.future, exc=value)
            for job in finished:
                future = self._futures.pop(job, None)
                if future is not None:
                    _settle(future, result=job.generation())

    async def _await_burst(self) -> None:
        """An idle engine got its first request: wait while more keep arriving (each within
        ``admission_window_s`` of the last, at most 10 windows in all), so a burst of
        concurrent requests from another process shares one prefill and one decode batch."""
        window = self.config.admission_window_s
        if window <= 0:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10 * window
        seen = len(self._inbox)
        while loop.time() < deadline and not self._commands:
            await asyncio.sleep(min(window, max(deadline - loop.time(), 0.0)))
            if len(self._inbox) == seen:
                return
            seen = len(self._inbox)

    def _step(
        self, commands: list[_Command], jobs: list[Job], stepping: bool = True
    ) -> tuple[list[tuple[bool, Any]], list[Job]]:
        """Worker-thread body: commands first (between two steps), then one step (none while
        paused).

        A command's own error (bad weights) is its caller's; anything else is an engine bug
        and propagates, failing the engine.
        """
        outcomes: list[tuple[bool, Any]] = []
        for command in commands:
            try:
                outcomes.append((True, command.action()))
            except (RefreshError, CheckpointError) as exc:
                outcomes.append((False, exc))
        return outcomes, self._core.iterate(jobs) if stepping else []

    def _fail_all(self, error: BaseException) -> None:
        for job, future in list(self._futures.items()):
            _settle(future, exc=error)
            del self._futures[job]
        self._inbox.clear()
        for command in self._commands:
            _settle(command.future, exc=error)
        self._commands.clear()


def _settle(
    future: asyncio.Future[Any],
    *,
    result: object = None,
    exc: BaseException | None = None,
) -> None:
    if future.done():
        return
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(result)
