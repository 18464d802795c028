"""The trainer's end of the NCCL weight transfer: one group per engine (Arctic-SWE §3.3)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import torch
from torch._C._distributed_c10d import TCPStore

from arctic_swe.transfer._errors import TransferProtocolError
from arctic_swe.transfer._gloo import GlooCommunicator, host_store, open_gloo_group
from arctic_swe.transfer._payloads import (
    DEFAULT_BUFFER_SIZE_BYTES,
    DEFAULT_NUM_BUFFERS,
    NcclInitInfo,
    UpdateInfo,
)
from arctic_swe.transfer._wire import send_weights

Weights = Callable[[int], Sequence[tuple[str, torch.Tensor]]]
PortPicker = Callable[[int], int]
"""Maps an engine's index (0, 1, ... in order of first `init_info`) to its store's port."""


@runtime_checkable
class WeightSender(Protocol):
    """The trainer side of ``HttpEngine``'s NCCL refresh path: one weight-transfer group per
    engine (the trainer is rank 0), vLLM 0.33's init and update payloads, and the broadcast.
    ``connect`` runs while the engine's ``/init_weight_transfer_engine`` runs, ``send`` while
    its ``/update_weights`` runs (both sides block inside the same collective)."""

    async def init_info(self, engine_id: str) -> dict[str, Any]:
        """The ``init_info`` of ``/init_weight_transfer_engine`` for ``engine_id`` (the trainer
        hosts that engine's rendezvous)."""
        ...

    async def connect(self, engine_id: str) -> None: ...

    async def update_info(self, version: int) -> dict[str, Any]: ...

    async def send(self, engine_id: str, version: int) -> None: ...


class LatestRound:
    """The newest version's ``(name, tensor)`` pairs and their :class:`UpdateInfo`, kept so
    that several engines refreshing to one version ask ``weights`` once (both senders)."""

    def __init__(self, weights: Weights) -> None:
        self._weights = weights
        self._lock = threading.Lock()
        self._kept: tuple[int, list[tuple[str, torch.Tensor]], UpdateInfo] | None = None

    def get(self, version: int) -> tuple[list[tuple[str, torch.Tensor]], UpdateInfo]:
        """``version``'s pairs and metadata (read from ``weights`` when it is a new one)."""
        with self._lock:
            if self._kept is None or self._kept[0] != version:
                pairs = list(self._weights(version))
                self._kept = (version, pairs, UpdateInfo.describe(pairs))
            return self._kept[1], self._kept[2]

    def clear(self) -> None:
        with self._lock:
            self._kept = None


def free_ports() -> PortPicker:
    """Let the OS choose a free port for each engine's store (no race: it is bound at once)."""
    return lambda _index: 0


def base_port(base: int) -> PortPicker:
    """Port ``base + index`` for the ``index``-th engine (for fixed firewall rules)."""
    return lambda index: base + index


class LocalWeightSender:
    """A `WeightSender` whose weights come from ``weights(version)`` in this process.

    ``weights`` returns ordered ``(hf_name, full_tensor)`` pairs. Each engine gets its own
    two-rank group (this process rank 0, the engine rank 1), so engines refresh independently.
    The pairs of the latest version are kept, so several engines refreshing to one version
    ask ``weights`` once.
    """

    def __init__(
        self,
        weights: Weights,
        *,
        host: str = "127.0.0.1",
        ports: PortPicker | None = None,
        packed: bool = True,
        buffer_size_bytes: int = DEFAULT_BUFFER_SIZE_BYTES,
        timeout_s: float = 300.0,
    ) -> None:
        self._latest = LatestRound(weights)
        self._host = host
        self._ports = ports if ports is not None else free_ports()
        self._packed = packed
        self._buffer_size_bytes = buffer_size_bytes
        self._timeout_s = timeout_s
        self._lock = threading.Lock()
        self._indices: dict[str, int] = {}
        self._stores: dict[str, TCPStore] = {}
        self._groups: dict[str, GlooCommunicator] = {}

    async def init_info(self, engine_id: str) -> dict[str, Any]:
        """Host ``engine_id``'s store (if not yet) and return its ``init_info`` payload."""
        return self.init_payload(engine_id)

    def init_payload(self, engine_id: str) -> dict[str, Any]:
        """:meth:`init_info` for synchronous callers (binding the store does not block).

        Called again after `connect` (the engine restarted and joins anew), it leaves the old
        group and hosts a fresh store, so no rendezvous keys of the old group are reused.
        """
        with self._lock:
            index = self._indices.setdefault(engine_id, len(self._indices))
            store = self._stores.get(engine_id)
            if store is None:
                old = self._groups.pop(engine_id, None)
                if old is not None:
                    old.close()  # releases its store (and port) before a fixed port is rebound
                store = host_store(
                    self._host, self._ports(index), world_size=2, timeout_s=self._timeout_s
                )
                self._stores[engine_id] = store
            info = NcclInitInfo(
                master_address=self._host,
                master_port=store.port,
                rank_offset=1,
                world_size=2,
                packed=self._packed,
                packed_buffer_size_bytes=self._buffer_size_bytes,
                packed_num_buffers=DEFAULT_NUM_BUFFERS,
            )
        return info.payload()

    async def connect(self, engine_id: str) -> None:
        """Open ``engine_id``'s group as rank 0; returns once the engine has joined."""
        await asyncio.to_thread(self._connect, engine_id)

    async def update_info(self, version: int) -> dict[str, Any]:
        """The ``update_info`` payload of ``version``'s weights."""
        _pairs, info = await asyncio.to_thread(self._latest.get, version)
        return info.payload()

    async def send(self, engine_id: str, version: int) -> None:
        """Broadcast ``version``'s weights into ``engine_id``'s group (packed as configured)."""
        await asyncio.to_thread(self._send, engine_id, version)

    def close(self) -> None:
        """Leave every group, release the stores and the kept weights."""
        with self._lock:
            for group in self._groups.values():
                group.close()
            self._groups.clear()
            self._stores.clear()
        self._latest.clear()

    def _connect(self, engine_id: str) -> None:
        with self._lock:
            store = self._stores.get(engine_id)
            old = self._groups.pop(engine_id, None)
        if store is None:
            raise TransferProtocolError(f"connect({engine_id!r}) before init_info({engine_id!r})")
        if old is not None:
            old.close()
        try:
            group = open_gloo_group(
                self._host, store.port, 0, 2, timeout_s=self._timeout_s, store=store
            )
        finally:
            # The store served one rendezvous (or failed it): the next init_info hosts anew.
            with self._lock:
                if self._stores.get(engine_id) is store:
                    del self._stores[engine_id]
        with self._lock:
            self._groups[engine_id] = group

    def _send(self, engine_id: str, version: int) -> None:
        group = self._groups.get(engine_id)
        if group is None:
            raise TransferProtocolError(f"send to {engine_id!r} before connect({engine_id!r})")
        pairs, info = self._latest.get(version)
        send_weights(
            pairs, group, packed=self._packed, buffer_size_bytes=self._buffer_size_bytes, info=info
        )
