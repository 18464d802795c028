"""The orchestrator's handle on rank 0's weight-transfer routes: a
:class:`arctic_swe.engine.WeightSender` for ``HttpEngine``'s NCCL refresh path (vLLM 0.33's
protocol; Arctic-SWE §3.3)."""

from __future__ import annotations

from typing import Any

from arctic_swe.distributed._client import RemoteTrainer


class RemoteWeightSender:
    """The trainer side of every engine's weight-transfer group, reached over the trainer's
    HTTP service (routes in :mod:`arctic_swe.distributed._transfer_routes`). A route that
    fails raises the trainer client's typed errors (``TrainerRequestError`` for a refusal,
    ``TrainerUnavailableError`` when the trainer does not answer), which the engine turns
    into a refresh error naming the engine and the route."""

    def __init__(self, trainer: RemoteTrainer) -> None:
        self._trainer = trainer

    async def init_info(self, engine_id: str) -> dict[str, Any]:
        return await self._trainer.request("/weight_transfer/init_info", {"engine_id": engine_id})

    async def connect(self, engine_id: str) -> None:
        await self._trainer.request("/weight_transfer/connect", {"engine_id": engine_id})

    async def update_info(self, version: int) -> dict[str, Any]:
        return await self._trainer.request("/weight_transfer/update_info", {"version": version})

    async def send(self, engine_id: str, version: int) -> None:
        body = {"engine_id": engine_id, "version": version}
        await self._trainer.request("/weight_transfer/send", body)
