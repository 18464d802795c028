"""The engine server's end of the NCCL weight transfer (Arctic-SWE §3.3)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import torch

from arctic_swe.transfer._errors import TransferProtocolError
from arctic_swe.transfer._gloo import GlooCommunicator, open_gloo_group
from arctic_swe.transfer._payloads import NcclInitInfo, UpdateInfo
from arctic_swe.transfer._wire import receive_weights


class EngineReceiver:
    """Joins a trainer's transfer group and receives weight rounds, as vLLM's NCCL engine does.

    Used behind ``/init_weight_transfer_engine`` (`join`) and ``/update_weights`` (`receive`).
    Every call blocks (the server runs them in a worker thread); calls are serialised.
    """

    def __init__(self, *, timeout_s: float = 300.0) -> None:
        self._timeout_s = timeout_s
        self._lock = threading.Lock()
        self._group: GlooCommunicator | None = None
        self._init: NcclInitInfo | None = None
        self._last: UpdateInfo | None = None

    @property
    def init_info(self) -> NcclInitInfo | None:
        """The init info of the group joined last (None before `join`)."""
        return self._init

    def join(self, init_payload: Mapping[str, Any]) -> None:
        """Parse ``init_info`` and join its group at rank ``rank_offset`` (replacing any group).

        TransferProtocolError on a bad payload; TransferTimeoutError if the trainer never
        shows up within the timeout.
        """
        info = NcclInitInfo.from_payload(init_payload)
        with self._lock:
            self._close_locked()
            self._group = open_gloo_group(
                info.master_address,
                info.master_port,
                info.rank_offset,
                info.world_size,
                timeout_s=self._timeout_s,
            )
            self._init = info

    def receive(self, update_payload: Mapping[str, Any]) -> dict[str, torch.Tensor]:
        """Receive one round described by ``update_info``; returns ``{name: CPU tensor}``.

        An empty ``update_info`` reuses the previous round's metadata (before any round it
        receives nothing, as vLLM does). TransferTimeoutError if the trainer sends nothing.
        """
        info = UpdateInfo.from_payload(update_payload)
        with self._lock:
            if self._group is None or self._init is None:
                raise TransferProtocolError(
                    "update_weights before init_weight_transfer_engine: no transfer group joined"
                )
            if info.is_empty:
                info = self._last if self._last is not None else info
            else:
                self._last = info
            received: dict[str, torch.Tensor] = {}
            receive_weights(
                info,
                self._group,
                packed=self._init.packed,
                buffer_size_bytes=self._init.packed_buffer_size_bytes,
                load=received.update,
            )
            return received

    def close(self) -> None:
        """Leave the group and forget the remembered metadata."""
        with self._lock:
            self._close_locked()

    def _close_locked(self) -> None:
        if self._group is not None:
            self._group.close()
        self._group = None
        self._init = None
        self._last = None
