"""The remote implementation of :class:`arctic_swe.trainer.TrainerHandle`: an async HTTP
client of the FSDP2 trainer process's rank 0 (Arctic-SWE §3.3, fully asynchronous). The step
is an awaited request, so the loop's engines keep generating batch k+1 while the remote ranks
train batch k; rank 0 publishes each version's weights itself and prunes its own.

A remote trainer that does not answer within ``timeout_s`` or answers 5xx raises
:class:`TrainerUnavailableError` (the run stops with that message), a refused batch
:class:`TrainerRequestError` — never a hang.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import torch

from arctic_swe.distributed._errors import (
    TrainerCheckpointError,
    TrainerRequestError,
    TrainerUnavailableError,
)
from arctic_swe.distributed._loopstate import load_loop_state, save_loop_state
from arctic_swe.distributed._wire import encode_batch
from arctic_swe.trainer import (
    LayerTypeKL,
    LoopState,
    Restored,
    ResumeError,
    StepStats,
    Tokenizer,
    TrainSample,
)
from arctic_swe.transfer import WeightSender
from arctic_swe.weights import WEIGHTS_FILE, WeightsError, read_weights


class RemoteTrainer:
    """:class:`arctic_swe.trainer.TrainerHandle` over HTTP to ``torchrun -m
    arctic_swe.distributed``'s rank 0.

    Use :meth:`connect` (checks ``/health`` and learns the world size, steps and version), then
    the handle's methods; :meth:`close` at the end."""

    def __init__(self, url: str, *, timeout_s: float = 900.0) -> None:
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self._client = httpx.AsyncClient(base_url=self.url, timeout=timeout_s)
        self._steps = 0
        self._world_size = 0
        self.version = 0
        self._weights: dict[int, Path] = {}
        self.last_stats: dict[str, Any] = {}
        self.last_digest = ""  # the trainer's digest of the last batch it received
        self._restored: Path | None = None  # the loop checkpoint a resume started from

    @property
    def steps(self) -> int:
        return self._steps

    @property
    def world_size(self) -> int:
        return self._world_size

    async def connect(self, *, timeout_s: float | None = None) -> RemoteTrainer:
        health = await self._call("GET", "/health", timeout=timeout_s or min(self.timeout_s, 30))
        self._steps, self.version = int(health["steps"]), int(health["version"])
        self._world_size = int(health["world_size"])
        return self

    async def health(self) -> dict[str, Any]:
        return await self._call("GET", "/health", timeout=min(self.timeout_s, 30))

    async def step(
        self,
        samples: Sequence[TrainSample],
        *,
        versions: Sequence[Sequence[int]] | None = None,
        version: int | None = None,
    ) -> StepStats:
        body = encode_batch(samples, versions, version=version)
        reply = await self._call("POST", "/step", json=body)
        stats = reply["stats"]
        self._steps, self.version = int(reply["step"]), int(reply["version"])
        self._weights = {self.version: Path(reply["weights_path"])}
        self.last_stats = stats
        self.last_digest = str(reply.get("batch_digest", ""))
        return StepStats(
            step=int(stats["step"]),
            loss=float(stats["loss"]),
            grad_norm=float(stats["grad_norm"]),
            mismatch_kl=float(stats["mismatch_kl"]),
            masked_frac=float(stats["masked_frac"]),
            entropy=float(stats["entropy"]),
            trainable_tokens=int(stats["trainable_tokens"]),
            rollouts=int(stats["rollouts"]),
            seconds=float(stats["seconds"]),
        )

    async def publish(self, version: int, root: Path) -> Path:
        """The directory rank 0 published for ``version`` during the step (``root`` unused)."""
        path = self._weights.get(version)
        if path is None:
            raise TrainerRequestError(409, f"the trainer wrote no weights for version {version}")
        return path

    def prune_published(self, root: Path, current: Path) -> None:
        """Nothing: rank 0 prunes the versions it wrote."""

    async def checkpoint(
        self, root: Path, state: LoopState, *, keep: int, tokenizer: Tokenizer = None
    ) -> Path:
        """The trainer's sharded checkpoint (its own directory, holding the tokenizer of its
        policy already), then the loop's state under ``root`` pointing at it."""
        sharded = await self.checkpoint_trainer()
        return save_loop_state(
            root,
            state.deck,
            step=self.steps,
            version=state.version,
            metrics_lines=state.metrics_lines,
            extras=state.extras,
            trainer_checkpoint=sharded,
            keep=keep,
        )

    async def checkpoint_trainer(self) -> Path:
        """A sharded checkpoint of the trainer now; returns its directory (on the trainer's
        filesystem)."""
        reply = await self._call("POST", "/checkpoint")
        return Path(reply["path"])

    def restore(self, checkpoint: Path) -> Restored:
        """The loop's state of ``checkpoint`` (the trainer restored its own with --resume)."""
        restored = load_loop_state(checkpoint)
        self._restored = checkpoint
        return restored

    def check_start(self, version: int) -> None:
        if self.version != version:
            raise ResumeError(
                f"the trainer at {self.url} holds policy version {self.version} but the run "
                f"starts from version {version}: start a fresh trainer for a new run, or the "
                "trainer with --resume on the run directory for a resumed one"
            )

    async def layer_audit(self, sample: TrainSample, tokens: int) -> LayerTypeKL | None:
        """``None``: the model lives in the trainer process."""
        return None

    def local_model(self) -> None:
        """``None``: remote runs have HTTP engines only, which never need the model here."""
        return

    def current_weights(self) -> dict[str, torch.Tensor]:
        """The resumed checkpoint's consolidated export (servers catching up on a resume)."""
        export = None if self._restored is None else self._restored / "model" / WEIGHTS_FILE
        if export is None or not export.is_file():
            raise TrainerCheckpointError(
                "the resumed checkpoint has no consolidated weights to load"
            )
        try:
            return read_weights(export)
        except WeightsError as exc:
            raise TrainerCheckpointError(f"the resumed checkpoint's weights: {exc}") from exc

    async def shutdown(self) -> None:
        await self._call("POST", "/shutdown", timeout=min(self.timeout_s, 30))

    def weight_sender(self) -> WeightSender:
        """Rank 0's weight-transfer routes (:class:`RemoteWeightSender`)."""
        from arctic_swe.distributed._weight_sender import RemoteWeightSender

        return RemoteWeightSender(self)

    async def request(self, route: str, body: dict[str, Any]) -> dict[str, Any]:
        """``POST route`` with a JSON ``body`` (the weight-transfer routes); the same typed
        errors as every call."""
        return await self._call("POST", route, json=body)

    async def close(self) -> None:
        await self._client.aclose()

    async def _call(
        self, method: str, route: str, *, json: Any = None, timeout: float | None = None
    ) -> dict[str, Any]:
        try:
            response = await self._client.request(
                method, route, json=json, timeout=timeout or self.timeout_s
            )
        except httpx.TimeoutException as exc:
            raise TrainerUnavailableError(
                f"trainer {self.url}{route} did not answer within {timeout or self.timeout_s:g} s"
            ) from exc
        except httpx.HTTPError as exc:
            raise TrainerUnavailableError(
                f"trainer {self.url} is unreachable ({type(exc).__name__}: {exc}); "
                "is the trainer process running?"
            ) from exc
        if response.status_code >= 500:
            raise TrainerUnavailableError(f"trainer {self.url}{route} failed: {_message(response)}")
        if response.status_code >= 400:
            raise TrainerRequestError(response.status_code, _message(response))
        body: dict[str, Any] = response.json()
        return body


def _message(response: httpx.Response) -> str:
    try:
        return str(response.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return response.text[:300] or f"HTTP {response.status_code}"
