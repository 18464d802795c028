"""The weight routes of ``arctic-swe serve``, with vLLM 0.33's semantics (Arctic-SWE §3.3).

vLLM keeps two independent things: the weights, changed by ``reload_weights``
(``/collective_rpc``) or by a weight-transfer session (``/init_weight_transfer_engine`` once,
then ``/start_weight_update`` → ``/update_weights``\\ … → ``/finish_weight_update``), and an
opaque *label* (``"default"`` until ``/update_weight_version`` or ``/finish_weight_update``
sets one) attached to every token sampled under it. Here the torch engine numbers every
(weights, label) pair with an internal version that only grows, and :class:`WeightRoutes`
maps internal versions to labels, so each token keeps the label it was sampled under.

The transfer backend is vLLM's NCCL protocol (TCP rendezvous, rank 0 the trainer, packed or
one-by-one broadcasts) carried over gloo on CPU (:class:`arctic_swe.transfer.EngineReceiver`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from arctic_swe.engine import START_LABEL, RefreshError, TorchEngine
from arctic_swe.weights import WeightsError, read_weights, tied_spec, weight_spec


class ProtocolError(ValueError):
    """A call out of protocol order or with a bad argument (HTTP 400); nothing changed."""


class TransferFailedError(RuntimeError):
    """The weight-transfer group failed (the trainer never joined, left, or timed out): HTTP
    500, as vLLM answers a failed collective; the served weights are unchanged."""


class WeightRoutes:
    """The weights and labels of one served engine (every method runs on the server's event
    loop; blocking transfers run in a worker thread)."""

    def __init__(
        self, engine: TorchEngine, model: torch.nn.Module, *, transfer_timeout_s: float = 300.0
    ) -> None:
        self.engine = engine
        self.transfer_timeout_s = transfer_timeout_s
        self._spec = weight_spec(model)
        self._tied = tied_spec(model)
        self._labels: dict[int, str] = {engine.version: START_LABEL}
        self._receiver: Any = None  # arctic_swe.transfer.EngineReceiver once initialised
        self._staged: dict[str, torch.Tensor] | None = None
        self._started = 0.0
        self._lock = asyncio.Lock()
        self.refreshes = 0
        self.refused = 0
        self.refresh_seconds = 0.0

    # ------------------------------------------------------------------ labels
    @property
    def label(self) -> str:
        """The label of the weights served now (``GET /weight_info``)."""
        return self.label_of(self.engine.version)

    def label_of(self, version: int) -> str:
        """The label tokens sampled under internal ``version`` carry."""
        return self._labels.get(version, START_LABEL)

    def labels_of(self, versions: Sequence[int]) -> list[str]:
        return [self.label_of(v) for v in versions]

    async def set_label(self, label: object) -> None:
        """``/update_weight_version``: tokens sampled from now on carry ``label``."""
        text = _label_text(label, "new_version")
        async with self._lock:
            version = self.engine.version + 1
            self._labels[version] = text
            await self.engine.relabel(version)

    # ------------------------------------------------------------------ reload
    async def reload(self, kwargs: Mapping[str, Any], *, invalidate: bool) -> None:
        """``/collective_rpc`` ``reload_weights``: load a directory of ``*.safetensors`` in
        place (the label is unchanged, as in vLLM); refused input keeps the old weights."""
        unknown = sorted(set(kwargs) - {"weights_path", "is_checkpoint_format"})
        if unknown:
            raise ProtocolError(f"reload_weights got unexpected arguments {unknown}")
        path = kwargs.get("weights_path")
        if not isinstance(path, str) or not path:
            raise ProtocolError("reload_weights needs weights_path (a weights directory)")
        if kwargs.get("is_checkpoint_format", True) is not True:
            raise ProtocolError("only checkpoint-format weights (Hugging Face names) are served")
        started = time.perf_counter()
        try:
            staged = await asyncio.to_thread(read_weights, path, spec=self._spec, tied=self._tied)
        except WeightsError as exc:
            self.refused += 1
            raise ProtocolError(f"reload_weights refused, old weights kept: {exc}") from exc
        await self._swap(staged, invalidate, label=None, started=started)

    # ------------------------------------------------------------------ transfer session
    async def init_transfer(self, init_info: object) -> None:
        """``/init_weight_transfer_engine``: join the trainer's group (blocks until the
        trainer side joins too)."""
        from arctic_swe.transfer import (
            EngineReceiver,
            TransferConnectionError,
            TransferProtocolError,
            TransferTimeoutError,
        )

        if not isinstance(init_info, Mapping):
            raise ProtocolError("init_info must be a JSON object")
        receiver = EngineReceiver(timeout_s=self.transfer_timeout_s)
        try:
            await asyncio.to_thread(receiver.join, dict(init_info))
        except TransferProtocolError as exc:
            raise ProtocolError(f"init_weight_transfer_engine: {exc}") from exc
        except (TransferTimeoutError, TransferConnectionError) as exc:
            raise TransferFailedError(f"init_weight_transfer_engine: {exc}") from exc
        if self._receiver is not None:
            await asyncio.to_thread(self._receiver.close)
        self._receiver = receiver

    async def shutdown_transfer(self) -> None:
        """``/shutdown_weight_transfer_engine``: leave the trainer's group."""
        if self._staged is not None:
            raise ProtocolError("cannot release the trainer connection during a weight update")
        receiver, self._receiver = self._receiver, None
        if receiver is not None:
            await asyncio.to_thread(receiver.close)

    def start_update(self) -> None:
        """``/start_weight_update``."""
        if self._receiver is None:
            raise ProtocolError("weight transfer is not initialised: /init_weight_transfer_engine")
        if self._staged is not None:
            raise ProtocolError("a weight update is already active: /finish_weight_update first")
        self._staged = {}
        self._started = time.perf_counter()

    async def receive(self, update_info: object) -> None:
        """``/update_weights``: receive one round of the broadcast into the staged update."""
        from arctic_swe.transfer import (
            TransferConnectionError,
            TransferProtocolError,
            TransferTimeoutError,
        )

        if self._staged is None or self._receiver is None:
            raise ProtocolError("call /start_weight_update before /update_weights")
        if not isinstance(update_info, Mapping):
            raise ProtocolError("update_info must be a JSON object")
        try:
            tensors = await asyncio.to_thread(self._receiver.receive, dict(update_info))
        except TransferProtocolError as exc:
            self._staged = None
            self.refused += 1
            raise ProtocolError(f"update_weights refused, old weights kept: {exc}") from exc
        except (TransferTimeoutError, TransferConnectionError) as exc:
            self._staged = None
            self.refused += 1
            raise TransferFailedError(f"update_weights failed, old weights kept: {exc}") from exc
        self._staged.update(tensors)

    async def finish_update(self, label: object, *, invalidate: bool) -> None:
        """``/finish_weight_update``: swap the received weights in (checked against the served
        model first) and label them ``label`` when one is given."""
        staged, self._staged = self._staged, None
        if staged is None:
            raise ProtocolError("finish_weight_update without a matching start_weight_update")
        text = None if label is None else _label_text(label, "weight_version")
        await self._swap(staged, invalidate, label=text, started=self._started)

    # ------------------------------------------------------------------ internals
    async def _swap(
        self,
        staged: dict[str, torch.Tensor],
        invalidate: bool,
        *,
        label: str | None,
        started: float,
    ) -> None:
        async with self._lock:
            version = self.engine.version + 1
            self._labels[version] = label if label is not None else self.label
            try:
                await self.engine.refresh_weights(staged, version, invalidate_caches=invalidate)
            except RefreshError as exc:
                self._labels.pop(version, None)
                self.refused += 1
                raise ProtocolError(f"weights refused, old weights kept: {exc}") from exc
        self.refreshes += 1
        self.refresh_seconds += time.perf_counter() - started


def _label_text(label: object, field: str) -> str:
    if not isinstance(label, str | int) or isinstance(label, bool) or str(label) == "":
        raise ProtocolError(f"{field} must be a non-empty string")
    return str(label)
