"""The synchronous heart of the torch engine: slots, admission, batched steps, refresh.

Everything here runs on one worker thread at a time (the async wrapper in ``_engine.py`` never
calls in concurrently). One :meth:`EngineCore.iterate` is one scheduling step: apply queued
weight refreshes, admit waiting requests into cache slots, run at most one (budget-bounded)
prefill forward and **one batched decode forward for every sequence that is decoding**, sample,
and return the requests that finished.

A slot that finished a turn is *parked*, not freed: the next turn of the same rollout sends its
whole history (ARCHITECTURE.md §6), and the engine recognises the parked history as a prefix of the new
prompt, so only the observation tokens are prefilled. Parked slots are evicted least recently
used when a new sequence needs room.
"""

from __future__ import annotations

import random
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn
from transformers import Qwen3_5TextConfig

from arctic_swe.engine._config import EngineConfig, FinishReason, Generation
from arctic_swe.engine._forward import batched_forward
from arctic_swe.engine._pools import CachePools
from arctic_swe.engine._sampling import sample_tokens
from arctic_swe.model import assign_weights


@dataclass(eq=False)
class Job:
    """One generate call as the core tracks it."""

    prompt: tuple[int, ...]
    max_new_tokens: int
    stop: frozenset[int]
    seed: int
    generator: random.Random
    submitted: float = field(default_factory=time.perf_counter)
    started: float | None = None
    cached_prompt: int = 0
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)
    finish: FinishReason | None = None
    cancelled: bool = False

    def generation(self) -> Generation:
        """The finished turn as a record."""
        started = self.started if self.started is not None else time.perf_counter()
        return Generation(
            token_ids=tuple(self.token_ids),
            logprobs=tuple(self.logprobs),
            versions=tuple(self.versions),
            finish_reason=self.finish or "cancelled",
            prompt_tokens=len(self.prompt),
            cached_prompt_tokens=self.cached_prompt,
            queue_seconds=started - self.submitted,
            seconds=time.perf_counter() - started,
            seed=self.seed,
            stop_token_ids=tuple(sorted(self.stop)),
        )


@dataclass(eq=False)
class Resident:
    """A sequence held in a cache slot: ``history`` is computed into the slot's caches,
    ``pending`` still has to be fed (a prompt suffix, or the token sampled last step)."""

    slot: int
    history: list[int] = field(default_factory=list)
    pending: list[int] = field(default_factory=list)
    job: Job | None = None
    last_used: int = 0


@dataclass(frozen=True)
class RefreshStats:
    """What one weight refresh cost."""

    version: int
    invalidated: bool
    sequences: int  # resident at the refresh (parked + in mid-turn)
    reprefilled_tokens: int  # history re-computed for the sequences in mid-turn
    seconds: float
    released: int = 0  # parked sequences whose caches were dropped, not re-computed


@dataclass
class CoreCounters:
    """Monotone counters for monitoring and benchmarks."""

    generated_tokens: int = 0
    prefilled_tokens: int = 0
    reused_prompt_tokens: int = 0
    decode_steps: int = 0
    prefill_forwards: int = 0
    evictions: int = 0


class EngineCore:
    """Slots, residents and the batched step loop over one model."""

    def __init__(self, model: nn.Module, config: EngineConfig, version: int) -> None:
        self.model = model
        self.config = config
        self.version = version
        model_config: Qwen3_5TextConfig = model.config  # type: ignore[assignment]
        self.vocab_size: int = int(model_config.vocab_size)
        self.max_seq_len: int = config.max_seq_len or int(model_config.max_position_embeddings)
        weight: torch.Tensor = model.get_submodule("model.embed_tokens").weight  # type: ignore[assignment]
        self.pools = CachePools(
            model_config, config.capacity, weight.device, weight.dtype, config.state_dtype
        )
        self.free_slots: list[int] = list(range(config.capacity))[::-1]
        self.residents: dict[int, Resident] = {}
        self.waiting: deque[Job] = deque()
        self.counters = CoreCounters()
        self._clock = 0

    # ------------------------------------------------------------------ queries
    def active(self) -> list[Resident]:
        """Residents generating right now, in slot order."""
        return [r for _, r in sorted(self.residents.items()) if r.job is not None]

    def has_work(self) -> bool:
        """Whether a step would do anything."""
        return bool(self.waiting) or any(r.job is not None for r in self.residents.values())

    # ------------------------------------------------------------------ the step
    @torch.inference_mode()
    def iterate(self, new_jobs: Sequence[Job]) -> list[Job]:
        """One scheduling step; returns the jobs that finished (including cancelled ones).

        Runs in inference mode (no autograd or view bookkeeping: about a tenth off a decode
        step of small ops); caches it allocates are inference tensors, written only here and
        in :meth:`refresh`."""
        self.waiting.extend(new_jobs)
        finished = self._drop_cancelled()
        self._admit()
        prefilling = [r for r in self.active() if len(r.pending) > 1 or not r.history]
        sampled_now: set[int] = set()
        if prefilling:
            group = self._prefill_group(prefilling)
            logits = self._feed(group, [r.pending[: self.config.prefill_chunk] for r in group])
            done = [i for i, r in enumerate(group) if not r.pending]
            finished += self._sample([group[i] for i in done], logits[done] if done else None)
            sampled_now = {group[i].slot for i in done}
        decoding = [r for r in self.active() if len(r.pending) == 1 and r.slot not in sampled_now]
        if decoding:
            logits = self._feed(decoding, [r.pending for r in decoding])
            self.counters.decode_steps += 1
            finished += self._sample(decoding, logits)
        return finished

    def _drop_cancelled(self) -> list[Job]:
        dropped = [job for job in self.waiting if job.cancelled]
        self.waiting = deque(job for job in self.waiting if not job.cancelled)
        for resident in self.residents.values():
            if resident.job is not None and resident.job.cancelled:
                dropped.append(resident.job)
                self._park(resident)
        for job in dropped:
            job.finish = "cancelled"
        return dropped

    def _admit(self) -> None:
        while self.waiting:
            job = self.waiting[0]
            resident = self._claim_prefix(job.prompt) or self._fresh_slot()
            if resident is None:
                return  # every slot is generating: wait for one to finish
            self.waiting.popleft()
            job.started = time.perf_counter()
            job.cached_prompt = len(resident.history)
            self.counters.reused_prompt_tokens += job.cached_prompt
            resident.pending = list(job.prompt[len(resident.history) :])
            resident.job = job
            self._touch(resident)

    def _claim_prefix(self, prompt: tuple[int, ...]) -> Resident | None:
        """The parked resident whose computed history is the longest strict prefix of
        ``prompt`` (so at least one token is left to produce the next-token logits)."""
        best: Resident | None = None
        for resident in self.residents.values():
            size = len(resident.history)
            if resident.job is not None or not 0 < size < len(prompt):
                continue
            if best is not None and size <= len(best.history):
                continue
            if (
                prompt[size - 1] == resident.history[-1]
                and tuple(resident.history) == prompt[:size]
            ):
                best = resident
        return best

    def _fresh_slot(self) -> Resident | None:
        if not self.free_slots:
            parked = [r for r in self.residents.values() if r.job is None]
            if not parked:
                return None
            self.release(min(parked, key=lambda r: r.last_used).slot)
            self.counters.evictions += 1
        slot = self.free_slots.pop()
        self.pools.reset([slot])
        resident = Resident(slot=slot)
        self.residents[slot] = resident
        return resident

    def _prefill_group(self, candidates: list[Resident]) -> list[Resident]:
        """The longest FIFO run of prefilling residents whose padded chunk fits the budget."""
        group: list[Resident] = []
        width = 0
        for resident in candidates:
            chunk = min(len(resident.pending), self.config.prefill_chunk)
            if group and (len(group) + 1) * max(width, chunk) > self.config.prefill_token_budget:
                break
            group.append(resident)
            width = max(width, chunk)
        return group

    def _feed(self, residents: list[Resident], chunks: list[list[int]]) -> torch.Tensor:
        """Run one forward of ``chunks`` and move them from pending to history."""
        logits = batched_forward(
            self.model,
            self.pools,
            [r.slot for r in residents],
            chunks,
            [len(r.history) for r in residents],
        )
        for resident, chunk in zip(residents, chunks, strict=True):
            resident.history.extend(chunk)
            del resident.pending[: len(chunk)]
        if any(len(chunk) > 1 for chunk in chunks):
            self.counters.prefill_forwards += 1
            self.counters.prefilled_tokens += sum(len(chunk) for chunk in chunks)
        return logits

    def _sample(self, residents: list[Resident], logits: torch.Tensor | None) -> list[Job]:
        if not residents or logits is None:
            return []
        jobs = [r.job for r in residents]
        assert all(job is not None for job in jobs)
        tokens, logprobs = sample_tokens(logits, [job.generator for job in jobs if job])
        finished: list[Job] = []
        for resident, token, logprob in zip(residents, tokens, logprobs, strict=True):
            job = resident.job
            assert job is not None
            job.token_ids.append(token)
            job.logprobs.append(logprob)
            job.versions.append(self.version)
            self.counters.generated_tokens += 1
            job.finish = self._finish_reason(job, token, len(resident.history) + 1)
            if job.finish is None:
                resident.pending = [token]
            else:
                finished.append(job)
                self._park(resident)
        return finished

    def _finish_reason(self, job: Job, token: int, length: int) -> FinishReason | None:
        if token in job.stop:
            return "stop"
        if len(job.token_ids) >= job.max_new_tokens:
            return "max_tokens"
        if length >= self.max_seq_len:
            return "context"
        return None

    def _park(self, resident: Resident) -> None:
        resident.job = None
        resident.pending = []
        self._touch(resident)

    def _touch(self, resident: Resident) -> None:
        self._clock += 1
        resident.last_used = self._clock

    def abort_all(self, queued: Sequence[Job]) -> list[Job]:
        """End every waiting and decoding job now (``queued``: jobs not handed to the core
        yet), each with the tokens it has so far and finish ``"cancelled"``; decoding slots are
        parked with their computed history, so a continuation reuses it. Returns the jobs."""
        aborted = [*queued, *self.waiting]
        self.waiting.clear()
        for resident in self.active():
            assert resident.job is not None
            aborted.append(resident.job)
            self._park(resident)
        for job in aborted:
            job.finish = "cancelled"
        return aborted

    # ------------------------------------------------------------------ slots
    def release(self, slot: int) -> None:
        """Free a parked slot (its cache content is forgotten)."""
        resident = self.residents.pop(slot)
        assert resident.job is None, "an active sequence cannot be released"
        self.free_slots.append(slot)

    def forget(self, token_ids: Sequence[int]) -> int:
        """Free every parked slot whose history is a prefix of ``token_ids``; return how many."""
        tokens = tuple(token_ids)
        doomed = [
            r.slot
            for r in self.residents.values()
            if r.job is None and tuple(r.history) == tokens[: len(r.history)]
        ]
        for slot in doomed:
            self.release(slot)
        return len(doomed)

    # ------------------------------------------------------------------ refresh
    @torch.inference_mode()
    def refresh(
        self, weights: Mapping[str, torch.Tensor], version: int, invalidate: bool
    ) -> RefreshStats:
        """Load ``weights`` (validated first: a bad set changes nothing) and report ``version``.

        With ``invalidate`` no cache computed under the old weights survives (paper §3.3):
        every **parked** sequence is released — its next turn, if it has one, is prefilled from
        scratch under the new weights, as vLLM resets its prefix cache after a weight update —
        and every sequence **in mid-turn** has its history recomputed right here, before its
        next token is sampled (its last unfed token stays pending). Releasing rather than
        re-prefilling parked sequences matters in an RL loop: most of them are finished
        rollouts that will never continue, and the router pauses every engine while a refresh
        runs. Without ``invalidate`` (the ablation) the caches computed under the old weights
        stay.
        """
        started = time.perf_counter()
        assign_weights(self.model, weights)
        self.version = version
        residents = list(self.residents.values())
        if not invalidate:
            return RefreshStats(version, False, len(residents), 0, time.perf_counter() - started)
        active = [r for r in residents if r.job is not None]
        parked = len(residents) - len(active)
        for resident in residents:
            if resident.job is None:
                self.release(resident.slot)
        self.pools.reset([r.slot for r in active])
        for resident in active:
            resident.pending = resident.history + resident.pending
            resident.history = []
        total = self._reprefill(active)
        elapsed = time.perf_counter() - started
        return RefreshStats(version, True, len(residents), total, elapsed, released=parked)

    def _reprefill(self, residents: list[Resident]) -> int:
        """Recompute the history of sequences in mid-turn; each keeps its last token pending
        (it is fed by the next decode step, which samples from the fresh state)."""
        total = 0
        while todo := [r for r in residents if len(r.pending) > 1]:
            group = self._prefill_group(todo)
            chunks = [
                r.pending[: min(len(r.pending) - 1, self.config.prefill_chunk)] for r in group
            ]
            self._feed(group, chunks)
            total += sum(len(chunk) for chunk in chunks)
        return total
