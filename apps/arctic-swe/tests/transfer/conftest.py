"""Shared helpers of the transfer tests: an in-memory loopback channel and real gloo pairs."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch

from arctic_swe.transfer import GlooCommunicator, host_store, open_gloo_group


class Recorder:
    """Rank 0's side of a loopback: keeps a copy of every broadcast."""

    def __init__(self) -> None:
        self.sent: list[torch.Tensor] = []

    def broadcast(self, tensor: torch.Tensor, src: int) -> None:
        assert src == 0
        self.sent.append(tensor.detach().clone())


class Replay:
    """Rank 1's side: fills each receive buffer with the next recorded broadcast."""

    def __init__(self, sent: list[torch.Tensor]) -> None:
        self.pending = deque(sent)

    def broadcast(self, tensor: torch.Tensor, src: int) -> None:
        assert src == 0
        sent = self.pending.popleft()
        # The two sides must cut the stream identically: same dtype, same element count.
        assert (sent.dtype, sent.shape) == (tensor.dtype, tensor.shape), (sent, tensor)
        tensor.copy_(sent)


def raw(tensor: torch.Tensor) -> bytes:
    """A tensor's bytes, for bit-identity checks (NaN-safe, dtype-agnostic)."""
    return bytes(tensor.detach().contiguous().view(-1).view(torch.uint8).tolist())


def in_thread(fn: Callable[[], Any]) -> Callable[[], Any]:
    """Start ``fn`` in a thread; the returned callable joins it and returns or re-raises."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as error:
            box["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def join(timeout: float = 60.0) -> Any:
        thread.join(timeout)
        assert not thread.is_alive(), "the thread did not finish"
        if "error" in box:
            raise box["error"]
        return box.get("value")

    return join


def gloo_pair(timeout_s: float = 30.0) -> tuple[GlooCommunicator, GlooCommunicator]:
    """A two-rank gloo group on 127.0.0.1, both ends in this process."""
    store = host_store("127.0.0.1", 0, world_size=2, timeout_s=timeout_s)
    peer = in_thread(lambda: open_gloo_group("127.0.0.1", store.port, 1, 2, timeout_s=timeout_s))
    rank0 = open_gloo_group("127.0.0.1", store.port, 0, 2, timeout_s=timeout_s, store=store)
    return rank0, peer()


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[GlooCommunicator, GlooCommunicator]]:
    rank0, rank1 = gloo_pair()
    yield rank0, rank1
    rank0.close()
    rank1.close()
