"""The trainer's end of vLLM 0.33's NCCL weight transfer, built from vLLM's own trainer-side
functions (Arctic-SWE §3.3).

Where :class:`~arctic_swe.transfer.LocalWeightSender` carries vLLM's protocol over gloo on the
CPU, :class:`VllmNcclSender` is the GPU path: the ``init_info`` payload comes from vLLM's
``build_worker_init_payload`` (so the worker is told exactly what vLLM's own trainer engine
would tell it), the group is vLLM's PyNccl endpoint opened by ``trainer_init`` as rank 0, and
the weights go out through ``packed_nccl_broadcast_producer`` (or one broadcast per tensor when
unpacked). Each engine gets its own two-rank group, so engines refresh independently.

vLLM is imported inside the methods: this module imports without it, and constructing a sender
where vLLM is missing raises :class:`VllmUnavailableError` (an ``ImportError``).

Blocking collectives run in daemon threads, not the event loop's executor: a collective whose
peer died never returns, and such a thread must not keep the trainer process from exiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib
import importlib.util
import socket
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import torch

from arctic_swe.transfer._errors import (
    TransferConnectionError,
    TransferProtocolError,
    TransferTimeoutError,
)
from arctic_swe.transfer._payloads import DEFAULT_BUFFER_SIZE_BYTES, DEFAULT_NUM_BUFFERS
from arctic_swe.transfer._sender import LatestRound, PortPicker, Weights, free_ports

_T = TypeVar("_T")


class VllmUnavailableError(ImportError):
    """``VllmNcclSender`` needs vLLM (the ``arctic-swe[vllm]`` environment) and it is missing."""


def _require_vllm() -> None:
    if importlib.util.find_spec("vllm") is None:
        raise VllmUnavailableError(
            "VllmNcclSender needs vLLM 0.33 (install the 'vllm' extra of arctic-swe); "
            "without it use LocalWeightSender (gloo on CPU)"
        )


def _vllm(module: str) -> Any:
    """vLLM's ``vllm.distributed.weight_transfer.<module>``, loaded on first use (looked up on
    each call, so a test may replace what needs a GPU)."""
    return importlib.import_module(f"vllm.distributed.weight_transfer.{module}")


def _pick_port(host: str, port: int) -> int:
    """``port``, or a port the OS reports free when ``port`` is 0. vLLM's endpoint binds the
    port itself when the trainer joins, so it can only be reserved this loosely."""
    if port:
        return port
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class VllmNcclSender:
    """A ``WeightSender`` (the ``"nccl"`` refresh path of ``HttpEngine``) over vLLM's NCCL.

    ``weights(version)`` returns ordered ``(hf_name, tensor)`` pairs on this process's CUDA
    device (the one current at construction unless ``device`` is given). The pairs of the
    latest version are kept, so engines refreshing to one version ask ``weights`` once.
    ``timeout_s`` bounds each rendezvous and each broadcast (:class:`TransferTimeoutError`;
    the group is unusable afterwards and the engine must be initialised again).
    """

    def __init__(
        self,
        weights: Weights,
        *,
        host: str = "127.0.0.1",
        ports: PortPicker | None = None,
        packed: bool = True,
        buffer_size_bytes: int = DEFAULT_BUFFER_SIZE_BYTES,
        num_buffers: int = DEFAULT_NUM_BUFFERS,
        device: int | None = None,
        timeout_s: float = 300.0,
    ) -> None:
        _require_vllm()
        if buffer_size_bytes <= 0 or num_buffers <= 0:
            raise TransferProtocolError("buffer_size_bytes and num_buffers must be positive")
        if timeout_s <= 0:
            raise TransferProtocolError(f"timeout_s must be positive, got {timeout_s!r}")
        self._latest = LatestRound(weights)
        self._host = host
        self._ports = ports if ports is not None else free_ports()
        self._packed = packed
        self._buffer_size_bytes = buffer_size_bytes
        self._num_buffers = num_buffers
        self._device = device
        self._timeout_s = timeout_s
        self._lock = threading.Lock()
        self._indices: dict[str, int] = {}
        self._rendezvous: dict[str, Any] = {}  # engine -> vLLM's NCCLTrainerInitInfo
        self._groups: dict[str, Any] = {}  # engine -> vLLM's PyNcclCommunicator

    async def init_info(self, engine_id: str) -> dict[str, Any]:
        """``engine_id``'s ``/init_weight_transfer_engine`` payload, as vLLM's trainer engine
        builds it (the worker joins at rank 1 of a two-rank group; packing and buffers as
        configured). A repeated call (the engine restarted) leaves the old group."""
        with self._lock:
            index = self._indices.setdefault(engine_id, len(self._indices))
            old = self._groups.pop(engine_id, None)
            info = _vllm("nccl_engine").NCCLTrainerInitInfo(
                master_address=self._host,
                master_port=_pick_port(self._host, self._ports(index)),
                world_size=2,
                packed=self._packed,
                packed_buffer_size_bytes=self._buffer_size_bytes,
                packed_num_buffers=self._num_buffers,
                rank=0,
            )
            self._rendezvous[engine_id] = info
        if old is not None:
            _destroy(old)
        payload: dict[str, Any] = _vllm("nccl_common").build_worker_init_payload(
            info,
            packed=info.packed,
            packed_buffer_size_bytes=info.packed_buffer_size_bytes,
            packed_num_buffers=info.packed_num_buffers,
        )
        return payload

    async def connect(self, engine_id: str) -> None:
        """Open ``engine_id``'s group as rank 0 with vLLM's ``trainer_init``; returns once the
        engine's worker has joined (run it while the engine's init route runs)."""
        with self._lock:
            info = self._rendezvous.pop(engine_id, None)
        if info is None:
            raise TransferProtocolError(f"connect({engine_id!r}) before init_info({engine_id!r})")
        where = f"engine {engine_id}: NCCL rendezvous at {info.master_address}:{info.master_port}"
        group = await self._in_thread(where, self._open, info)
        if getattr(group, "disabled", False):
            # vLLM's communicator silently turns itself off without an NCCL library: every
            # broadcast would then be a no-op and the engine would wait forever.
            raise TransferConnectionError(f"{where}: vLLM's NCCL communicator is disabled")
        with self._lock:
            self._groups[engine_id] = group

    async def update_info(self, version: int) -> dict[str, Any]:
        """``{"names", "dtype_names", "shapes"}`` of ``version``'s weights (vLLM's
        ``NCCLWeightTransferUpdateInfo``)."""
        _pairs, described = await asyncio.to_thread(self._latest.get, version)
        # vLLM's own dataclass checks what the worker will parse
        info = _vllm("nccl_engine").NCCLWeightTransferUpdateInfo(**described.payload())
        return dataclasses.asdict(info)

    async def send(self, engine_id: str, version: int) -> None:
        """Broadcast ``version``'s weights into ``engine_id``'s group from rank 0 (run it
        while the engine's ``/update_weights`` runs); returns once the sends have landed."""
        with self._lock:
            group = self._groups.get(engine_id)
        if group is None:
            raise TransferProtocolError(f"send to {engine_id!r} before connect({engine_id!r})")
        pairs, _info = await asyncio.to_thread(self._latest.get, version)
        expected = getattr(group, "device", None)
        for name, tensor in pairs:
            if expected is not None and tensor.device != expected:
                raise TransferProtocolError(
                    f"{name!r} is on {tensor.device}, the NCCL group of {engine_id!r} on "
                    f"{expected}: weights(version) must return tensors on that device"
                )
        await self._in_thread(f"engine {engine_id}: NCCL broadcast", self._broadcast, group, pairs)

    def close(self) -> None:
        """Destroy every group and drop the kept weights."""
        with self._lock:
            groups = list(self._groups.values())
            self._groups.clear()
            self._rendezvous.clear()
        self._latest.clear()
        for group in groups:
            _destroy(group)

    # ------------------------------------------------------------ in the worker threads
    def _set_device(self) -> None:
        # The current CUDA device is per thread; vLLM's helpers read it.
        if self._device is not None:
            torch.cuda.set_device(self._device)

    def _open(self, info: Any) -> Any:
        self._set_device()
        return _vllm("nccl_common").trainer_init(info, rank=0)

    def _broadcast(self, group: Any, pairs: list[tuple[str, torch.Tensor]]) -> None:
        self._set_device()
        if self._packed:
            _vllm("packed_tensor").packed_nccl_broadcast_producer(
                iterator=iter(pairs),
                group=group,
                src=0,
                post_iter_func=lambda item: item[1],
                buffer_size_bytes=self._buffer_size_bytes,
                num_buffers=self._num_buffers,
            )
        else:
            stream = torch.cuda.current_stream()
            for _name, tensor in pairs:
                # NCCL reads numel elements from data_ptr(): a view must be made contiguous.
                group.broadcast(tensor.contiguous(), src=0, stream=stream)
        # Enqueued is not sent: wait, so the caller may change its weights on return.
        torch.accelerator.current_stream().synchronize()

    async def _in_thread(self, what: str, fn: Callable[..., _T], *args: Any) -> _T:
        """``fn(*args)`` in a daemon thread, bounded by ``timeout_s``; failures name ``what``."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[_T] = loop.create_future()

        def settle(value: Any, error: BaseException | None) -> None:
            if future.done():  # timed out or cancelled meanwhile
                return
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(value)

        def run() -> None:
            try:
                value, error = fn(*args), None
            except BaseException as exc:  # handed to the awaiting task
                value, error = None, exc
            with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits
                loop.call_soon_threadsafe(settle, value, error)

        threading.Thread(target=run, name=f"vllm-nccl {what}", daemon=True).start()
        try:
            return await asyncio.wait_for(future, self._timeout_s)
        except (TransferProtocolError, TransferConnectionError, TransferTimeoutError):
            raise
        except TimeoutError as exc:  # asyncio's timeout (TimeoutError since Python 3.11)
            raise TransferTimeoutError(f"{what}: no answer in {self._timeout_s:g} s") from exc
        except Exception as exc:
            raise TransferConnectionError(f"{what} failed: {exc!r}") from exc


def _destroy(group: Any) -> None:
    with contextlib.suppress(Exception):  # a group whose peer is gone may fail to tear down
        group.destroy()
