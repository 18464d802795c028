"""The transfer group: a two-party broadcast channel over torch.distributed gloo (Arctic-SWE §3.3).

vLLM joins trainer and engine worker through a TCPStore hosted by rank 0 and runs NCCL over it.
This CPU engine keeps that rendezvous and runs gloo instead. The group is built straight on the
store, never through ``init_process_group``, so it lives beside a trainer's own default group.
"""

from __future__ import annotations

import datetime
from typing import Protocol, runtime_checkable

import torch

# The c10d classes themselves (torch.distributed re-exports them without typing them).
from torch._C._distributed_c10d import (
    BroadcastOptions,
    PrefixStore,
    ProcessGroupGloo,
    Store,
    TCPStore,
)

from arctic_swe.transfer._errors import (
    TransferConnectionError,
    TransferProtocolError,
    TransferTimeoutError,
)

# Keys of the gloo rendezvous live under this prefix, apart from anything else on the store.
_STORE_PREFIX = "arctic-swe/weight-transfer/"


@runtime_checkable
class Communicator(Protocol):
    """What the wire format needs of a group: broadcast ``tensor`` in place from rank ``src``."""

    def broadcast(self, tensor: torch.Tensor, src: int) -> None: ...


def _translate(error: RuntimeError, what: str) -> Exception:
    # gloo and the store report both timeouts and dead peers as RuntimeError; tell them apart.
    text = str(error)
    if "timed out" in text.lower() or "timeout" in text.lower():
        return TransferTimeoutError(f"{what} timed out: {text}")
    return TransferConnectionError(f"{what} failed: {text}")


def host_store(address: str, port: int, *, world_size: int, timeout_s: float) -> TCPStore:
    """Host the rendezvous store on rank 0's side; ``port`` 0 lets the OS choose (see ``.port``).

    It returns at once: peers are awaited when the group is opened on it.
    """
    try:
        return TCPStore(
            address,
            port,
            world_size,
            is_master=True,
            timeout=datetime.timedelta(seconds=timeout_s),
            wait_for_workers=False,
        )
    except RuntimeError as error:
        raise _translate(error, f"hosting the transfer store on {address}:{port}") from error


class GlooCommunicator:
    """A gloo process group of ``world_size`` ranks on a TCPStore; this process is ``rank``."""

    def __init__(self, store: Store, rank: int, world_size: int, *, timeout_s: float) -> None:
        self.rank = rank
        self.world_size = world_size
        self._store: Store | None = store
        timeout = datetime.timedelta(seconds=timeout_s)
        try:
            # Blocks until every rank has connected (or the timeout passes).
            self._group: ProcessGroupGloo | None = ProcessGroupGloo(
                PrefixStore(_STORE_PREFIX, store), rank, world_size, timeout
            )
        except RuntimeError as error:
            raise _translate(error, f"joining the transfer group as rank {rank}") from error

    def broadcast(self, tensor: torch.Tensor, src: int, stream: object = None) -> None:
        """Broadcast ``tensor`` from ``src`` into every rank's ``tensor``, in place.

        ``stream`` is accepted (and ignored) so the object also fits vLLM's NCCL-communicator
        call shape. The bytes travel as a flat uint8 view, so any dtype passes gloo unchanged.
        Each broadcast is preceded by its byte count: gloo aborts the whole process on a size
        mismatch, so a receiver whose buffer disagrees drains the sender's bytes (keeping the
        group in step) and raises TransferProtocolError instead.
        """
        if self._group is None:
            raise TransferConnectionError("the transfer group is closed")
        if not tensor.is_contiguous():
            raise ValueError("broadcast needs a contiguous tensor (it fills it in place)")
        host = tensor if tensor.device.type == "cpu" else tensor.detach().to("cpu")
        wire = host.detach().view(-1).view(torch.uint8)
        header = torch.tensor([wire.numel()], dtype=torch.int64)
        self._run(header, src)
        announced = int(header.item())
        if announced != wire.numel():
            self._run(torch.empty(announced, dtype=torch.uint8), src)
            raise TransferProtocolError(
                f"rank {src} broadcast {announced} bytes where rank {self.rank} expected "
                f"{wire.numel()}: the two sides disagree on the metadata or the buffer size"
            )
        self._run(wire, src)
        if host is not tensor and self.rank != src:
            tensor.copy_(host)

    def _run(self, wire: torch.Tensor, src: int) -> None:
        if wire.numel() == 0:
            return  # announced as empty on every rank alike
        options = BroadcastOptions()
        options.rootRank = src
        assert self._group is not None
        try:
            # The stubs declare the collectives on ProcessGroup only; the gloo backend has them.
            self._group.broadcast([wire], options).wait()  # type: ignore[attr-defined]
        except RuntimeError as error:
            raise _translate(
                error, f"broadcast from rank {src} (this is rank {self.rank})"
            ) from error

    def close(self) -> None:
        """Drop the group and the store; further broadcasts raise TransferConnectionError."""
        self._group = None
        self._store = None


def open_gloo_group(
    address: str,
    port: int,
    rank: int,
    world_size: int,
    *,
    timeout_s: float,
    store: TCPStore | None = None,
) -> GlooCommunicator:
    """Join the transfer group at ``address:port`` as ``rank`` (Arctic-SWE §3.3).

    Rank 0 hosts the TCPStore (pass ``store`` when it was hosted already, e.g. to learn an
    OS-chosen port before the peer is told); other ranks connect to it. Blocks until all
    ``world_size`` ranks have joined; TransferTimeoutError after ``timeout_s``.
    """
    if store is None:
        if rank == 0:
            store = host_store(address, port, world_size=world_size, timeout_s=timeout_s)
        else:
            try:
                store = TCPStore(
                    address,
                    port,
                    world_size,
                    is_master=False,
                    timeout=datetime.timedelta(seconds=timeout_s),
                )
            except RuntimeError as error:
                raise _translate(
                    error, f"reaching the transfer store at {address}:{port}"
                ) from error
    return GlooCommunicator(store, rank, world_size, timeout_s=timeout_s)
