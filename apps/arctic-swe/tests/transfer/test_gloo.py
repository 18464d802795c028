from __future__ import annotations

import socket
import time

import pytest
import torch
import torch.distributed as dist

from arctic_swe.transfer import (
    Communicator,
    GlooCommunicator,
    TransferConnectionError,
    TransferProtocolError,
    TransferTimeoutError,
    host_store,
    open_gloo_group,
)

from .conftest import gloo_pair, in_thread


@pytest.mark.parametrize(
    "tensor",
    [
        torch.randn(5, 3).to(torch.bfloat16),
        torch.arange(7),
        torch.tensor([True, False, True]),
        torch.tensor(2.5),
    ],
)
def test_broadcast_fills_the_peer_in_place(
    pair: tuple[GlooCommunicator, GlooCommunicator], tensor: torch.Tensor
) -> None:
    rank0, rank1 = pair
    target = torch.empty_like(tensor)
    join = in_thread(lambda: rank1.broadcast(target, src=0))
    rank0.broadcast(tensor, src=0)
    join()
    assert torch.equal(target, tensor)
    assert isinstance(rank0, Communicator)


def test_the_group_does_not_touch_the_default_process_group(
    pair: tuple[GlooCommunicator, GlooCommunicator],
) -> None:
    # It must be able to live beside a trainer's own init_process_group.
    assert not dist.is_initialized()


def test_receive_with_nobody_sending_times_out() -> None:
    rank0, rank1 = gloo_pair(timeout_s=1.0)
    started = time.monotonic()
    with pytest.raises(TransferTimeoutError, match="timed out"):
        rank1.broadcast(torch.empty(4), src=0)
    assert time.monotonic() - started < 20
    rank0.close()
    rank1.close()


def test_joining_with_no_host_times_out() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(TransferTimeoutError):
        open_gloo_group("127.0.0.1", port, 1, 2, timeout_s=1.0)


def test_hosting_with_no_peer_times_out() -> None:
    store = host_store("127.0.0.1", 0, world_size=2, timeout_s=1.0)
    with pytest.raises(TransferTimeoutError):
        open_gloo_group("127.0.0.1", store.port, 0, 2, timeout_s=1.0, store=store)


def test_a_closed_group_refuses_to_broadcast() -> None:
    rank0, rank1 = gloo_pair()
    rank0.close()
    with pytest.raises(TransferConnectionError, match="closed"):
        rank0.broadcast(torch.zeros(1), src=0)
    rank1.close()


def test_broadcast_needs_a_contiguous_buffer(
    pair: tuple[GlooCommunicator, GlooCommunicator],
) -> None:
    with pytest.raises(ValueError, match="contiguous"):
        pair[1].broadcast(torch.zeros(3, 4).t(), src=0)


def test_a_size_mismatch_is_a_typed_error_and_the_group_stays_in_step(
    pair: tuple[GlooCommunicator, GlooCommunicator],
) -> None:
    rank0, rank1 = pair
    join = in_thread(lambda: rank1.broadcast(torch.empty(3), src=0))
    rank0.broadcast(torch.ones(5), src=0)  # gloo alone would abort the process here
    with pytest.raises(TransferProtocolError, match="broadcast 20 bytes where rank 1 expected 12"):
        join()
    target = torch.empty(2)
    join = in_thread(lambda: rank1.broadcast(target, src=0))
    rank0.broadcast(torch.tensor([7.0, 8.0]), src=0)
    join()
    assert target.tolist() == [7.0, 8.0]


def test_empty_tensors_broadcast(pair: tuple[GlooCommunicator, GlooCommunicator]) -> None:
    rank0, rank1 = pair
    join = in_thread(lambda: rank1.broadcast(torch.empty(0, 4), src=0))
    rank0.broadcast(torch.zeros(0, 4), src=0)
    join()
