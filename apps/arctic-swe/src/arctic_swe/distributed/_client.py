"""The orchestrator's side of the trainer seam: one protocol, two trainers.

The RL loop (Arctic-SWE §3.3, fully asynchronous) only ever talks to a :class:`TrainerHandle`:

* :class:`InProcessTrainer` wraps the in-process :class:`arctic_swe.trainer.Trainer` (its step
  runs on a worker thread, the event loop keeps generating);
* :class:`RemoteTrainer` is an async HTTP client of the FSDP2 trainer process's rank 0; the
  step is an awaited request, so the loop's engines keep generating batch k+1 while the remote
  ranks train batch k.

Both give back :class:`arctic_swe.trainer.StepStats`, publish the new policy as a weights
directory (the ``reload`` refresh path) and offer the trainer side of the ``nccl`` path
(:meth:`TrainerHandle.weight_sender`). A remote trainer that does not
answer within ``timeout_s`` or answers 5xx raises :class:`TrainerUnavailableError` (the run
stops with that message), a refused batch :class:`TrainerRequestError` — never a hang.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import httpx

from arctic_swe.distributed._errors import TrainerRequestError, TrainerUnavailableError
from arctic_swe.distributed._wire import encode_batch
from arctic_swe.trainer import StepStats, Trainer, TrainSample
from arctic_swe.transfer import WeightSender


@runtime_checkable
class TrainerHandle(Protocol):
    """What the orchestrator needs from a trainer, wherever it runs."""

    @property
    def steps(self) -> int:
        """Optimizer steps taken so far."""
        ...

    @property
    def world_size(self) -> int:
        """Data-parallel ranks the trainer trains on (1 in process)."""
        ...

    async def step(
        self,
        samples: Sequence[TrainSample],
        *,
        versions: Sequence[Sequence[int]] | None = None,
        version: int | None = None,
    ) -> StepStats:
        """One optimizer step on the global batch ``samples`` (``versions``: per-token policy
        versions of each sample; ``version``: the policy version this step produces)."""
        ...

    async def weights_file(self, version: int, directory: Path) -> Path:
        """The published directory of the current weights (policy ``version``) for an engine
        refresh; written under ``directory`` if the trainer did not already write one."""
        ...

    def weight_sender(self) -> WeightSender:
        """The trainer side of the engines' NCCL refresh path (vLLM 0.33's protocol)."""
        ...


class InProcessTrainer:
    """:class:`TrainerHandle` over the in-process trainer (the embedded topology)."""

    def __init__(self, trainer: Trainer) -> None:
        self.trainer = trainer

    @property
    def steps(self) -> int:
        return self.trainer.steps

    @property
    def world_size(self) -> int:
        return 1

    async def step(
        self,
        samples: Sequence[TrainSample],
        *,
        versions: Sequence[Sequence[int]] | None = None,
        version: int | None = None,
    ) -> StepStats:
        return await asyncio.to_thread(self.trainer.step, samples)

    async def weights_file(self, version: int, directory: Path) -> Path:
        from arctic_swe._published import publish

        return await asyncio.to_thread(publish, self.trainer.weights(), directory, version)

    def weight_sender(self) -> WeightSender:
        """Broadcasts this process's current weights (one group per engine, this process
        rank 0); the groups close with the process."""
        from arctic_swe.transfer import LocalWeightSender

        trainer = self.trainer
        return LocalWeightSender(lambda _version: list(trainer.weights().items()))


class RemoteTrainer:
    """:class:`TrainerHandle` over HTTP to ``torchrun -m arctic_swe.distributed``'s rank 0.

    Use :meth:`connect` (checks ``/health`` and learns the world size, steps and version), then
    ``step``/``weights_file``/``checkpoint``; :meth:`aclose` at the end."""

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

    async def weights_file(self, version: int, directory: Path) -> Path:
        path = self._weights.get(version)
        if path is None:
            raise TrainerRequestError(409, f"the trainer wrote no weights for version {version}")
        return path

    async def checkpoint(self) -> Path:
        """A sharded checkpoint of the trainer now; returns its directory (on the trainer's
        filesystem)."""
        reply = await self._call("POST", "/checkpoint")
        return Path(reply["path"])

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

    async def aclose(self) -> None:
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
