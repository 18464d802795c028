"""``VllmNcclSender`` against vLLM 0.33's own NCCL weight-transfer code (Arctic-SWE §3.3).

Its payloads parse with vLLM's dataclasses; its broadcast, run through vLLM's unchanged
``packed_nccl_broadcast_producer``, is received by vLLM's ``packed_nccl_broadcast_consumer``.
Only what needs a GPU is replaced: vLLM's ``trainer_init`` opens a CPU stand-in with the
NCCL communicator's ``broadcast(tensor, src, stream)`` over our gloo group, and vLLM's
CUDA-stream bookkeeping is made a no-op.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("vllm")  # the module runs only where vLLM imports

import torch
from conformance_support import (
    StandInCommunicator,
    in_thread,
    patch_cpu_streams,
    vllm_packed_consume,
)
from vllm.distributed.weight_transfer import nccl_common
from vllm.distributed.weight_transfer.nccl_common import NCCLWeightTransferInitInfo
from vllm.distributed.weight_transfer.nccl_engine import NCCLWeightTransferUpdateInfo

from arctic_swe.transfer import (
    GlooCommunicator,
    TransferConnectionError,
    TransferProtocolError,
    TransferTimeoutError,
    base_port,
    free_ports,
    host_store,
    open_gloo_group,
)
from arctic_swe.transfer._vllm_sender import VllmNcclSender

TIMEOUT_S = 30.0
Pairs = list[tuple[str, torch.Tensor]]


def _weights(version: int) -> Pairs:
    generator = torch.Generator().manual_seed(version)
    return [
        ("model.embed_tokens.weight", torch.randn(7, 5, generator=generator)),
        ("model.layers.0.mlp.gate_proj.weight", torch.randn(3, 5, generator=generator).bfloat16()),
        ("model.norm.weight", torch.randn(5, generator=generator).half()),
    ]


@pytest.fixture
def cpu_streams(monkeypatch: pytest.MonkeyPatch) -> None:
    patch_cpu_streams(monkeypatch)


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, int, StandInCommunicator]]:
    """vLLM's ``trainer_init`` replaced: rank 0 hosts our gloo group at the payload's
    rendezvous; every call is recorded as (info, rank, communicator)."""
    calls: list[tuple[Any, int, StandInCommunicator]] = []

    def trainer_init(info: Any, rank: int = 0) -> StandInCommunicator:
        store = host_store(
            info.master_address, info.master_port, world_size=info.world_size, timeout_s=TIMEOUT_S
        )
        group = open_gloo_group(
            info.master_address, store.port, rank, info.world_size, timeout_s=TIMEOUT_S, store=store
        )
        calls.append((info, rank, StandInCommunicator(group)))
        return calls[-1][2]

    monkeypatch.setattr(nccl_common, "trainer_init", trainer_init)
    return calls


def _engine_side(payload: dict[str, Any], body: Callable[[GlooCommunicator], Any]) -> Any:
    """The engine's worker in a thread: joins the payload's group at its rank offset, runs
    ``body``; returns a join() that gives body's value (or raises its error)."""
    info = NCCLWeightTransferInitInfo(**payload)

    def run() -> Any:
        group = open_gloo_group(
            str(info.master_address),
            int(info.master_port or 0),
            info.rank_offset,
            info.world_size,
            timeout_s=TIMEOUT_S,
        )
        try:
            return body(group)
        finally:
            group.close()

    return in_thread(run, TIMEOUT_S * 2)


def _consume(packed: bool, buffer: int, info: dict[str, Any]) -> Callable[[Any], Pairs]:
    """vLLM's receiving side of one round (packed: its consumer; else one broadcast each)."""
    update = NCCLWeightTransferUpdateInfo(**info)
    shapes = [
        (name, (shape, getattr(torch, dtype)))
        for name, dtype, shape in zip(update.names, update.dtype_names, update.shapes, strict=True)
    ]

    def body(group: GlooCommunicator) -> Pairs:
        received: Pairs = []
        theirs = StandInCommunicator(group)
        if packed:
            vllm_packed_consume(shapes, theirs, buffer, received.extend)
        else:
            for name, (shape, dtype) in shapes:
                tensor = torch.empty(shape, dtype=dtype)
                theirs.broadcast(tensor, src=0)
                received.append((name, tensor))
        return received

    return body


def test_init_payload_is_vllms_worker_init_info_for_a_two_rank_group() -> None:
    sender = VllmNcclSender(_weights, ports=base_port(41_000), packed=True, buffer_size_bytes=4096)
    first = asyncio.run(sender.init_info("engine-a"))
    info = NCCLWeightTransferInitInfo(**first)
    assert (info.master_address, info.master_port) == ("127.0.0.1", 41_000)
    assert (info.rank_offset, info.world_size) == (1, 2)
    assert (info.packed, info.packed_buffer_size_bytes, info.packed_num_buffers) == (True, 4096, 2)
    assert "nccl_unique_id_b64" not in first  # the TCP rendezvous, not a unique id
    # A port per engine, kept across a re-initialisation.
    assert asyncio.run(sender.init_info("engine-b"))["master_port"] == 41_001
    assert asyncio.run(sender.init_info("engine-a"))["master_port"] == 41_000
    unpacked = VllmNcclSender(_weights, packed=False, ports=free_ports())
    payload = asyncio.run(unpacked.init_info("engine-a"))
    assert NCCLWeightTransferInitInfo(**payload).packed is False
    assert payload["master_port"] > 0


def test_update_info_is_vllms_update_info_and_asks_for_each_version_once() -> None:
    asked: list[int] = []

    def weights(version: int) -> Pairs:
        asked.append(version)
        return _weights(version)

    sender = VllmNcclSender(weights)
    payload = asyncio.run(sender.update_info(3))
    info = NCCLWeightTransferUpdateInfo(**payload)
    assert info.names == [name for name, _ in _weights(3)]
    assert info.dtype_names == ["float32", "bfloat16", "float16"]
    assert info.shapes == [[7, 5], [3, 5], [5]]
    asyncio.run(sender.update_info(3))
    asyncio.run(sender.update_info(4))
    assert asked == [3, 4]


def test_out_of_order_calls_are_protocol_errors() -> None:
    sender = VllmNcclSender(_weights)
    with pytest.raises(TransferProtocolError, match="before init_info"):
        asyncio.run(sender.connect("engine-a"))
    with pytest.raises(TransferProtocolError, match="before connect"):
        asyncio.run(sender.send("engine-a", 1))


@pytest.mark.usefixtures("cpu_streams")
@pytest.mark.parametrize(("packed", "buffer"), [(True, 64), (True, 1 << 20), (False, 64)])
def test_send_reaches_vllms_receiving_code_byte_for_byte(
    opened: list[tuple[Any, int, StandInCommunicator]], packed: bool, buffer: int
) -> None:
    sender = VllmNcclSender(_weights, packed=packed, buffer_size_bytes=buffer, timeout_s=TIMEOUT_S)

    async def body() -> list[Pairs]:
        payload = await sender.init_info("engine-a")
        infos = [await sender.update_info(version) for version in (1, 2)]
        rounds = [_consume(packed, buffer, info) for info in infos]
        # One group, two rounds, as an engine refreshed twice.
        join = _engine_side(payload, lambda group: [receive(group) for receive in rounds])
        await sender.connect("engine-a")
        for version in (1, 2):
            await sender.send("engine-a", version)
        received: list[Pairs] = join()
        return received

    rounds = asyncio.run(body())
    for version, received in zip((1, 2), rounds, strict=True):
        sent = _weights(version)
        assert [name for name, _ in received] == [name for name, _ in sent]
        for (_, got), (_, want) in zip(received, sent, strict=True):
            assert got.dtype == want.dtype
            assert torch.equal(got, want)
    # vLLM's trainer_init was handed the payload's rendezvous, as rank 0.
    ((info, rank, group),) = opened
    assert (info.master_address, info.world_size, rank) == ("127.0.0.1", 2, 0)
    assert not group.destroyed
    asyncio.run(sender.init_info("engine-a"))  # the engine restarted: the old group is left
    assert group.destroyed


def test_tensors_off_the_groups_device_are_refused_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(nccl_common, "trainer_init", lambda info, rank=0: _Fake("cuda:0"))
    sender = VllmNcclSender(_weights)

    async def body() -> None:
        await sender.init_info("engine-a")
        await sender.connect("engine-a")
        await sender.send("engine-a", 1)

    with pytest.raises(TransferProtocolError, match=r"'model.embed_tokens.weight' is on cpu"):
        asyncio.run(body())


def test_a_disabled_communicator_and_a_silent_peer_are_typed_errors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = _Fake("cpu")
    fake.disabled = True
    monkeypatch.setattr(nccl_common, "trainer_init", lambda info, rank=0: fake)
    sender = VllmNcclSender(_weights, timeout_s=0.3)

    async def connect() -> None:
        await sender.init_info("engine-a")
        await sender.connect("engine-a")

    with pytest.raises(TransferConnectionError, match="communicator is disabled"):
        asyncio.run(connect())

    monkeypatch.setattr(nccl_common, "trainer_init", lambda info, rank=0: time.sleep(5))
    started = time.monotonic()
    with pytest.raises(
        TransferTimeoutError, match=r"NCCL rendezvous at 127\.0\.0\.1:\d+: no answer"
    ):
        asyncio.run(connect())
    assert time.monotonic() - started < 3  # the stuck rendezvous is left to its daemon thread

    def refuse(info: Any, rank: int = 0) -> None:
        raise RuntimeError("NCCL error: invalid usage (duplicate GPU)")

    monkeypatch.setattr(nccl_common, "trainer_init", refuse)
    with pytest.raises(TransferConnectionError, match="duplicate GPU"):
        asyncio.run(connect())


class _Fake:
    def __init__(self, device: str) -> None:
        self.device, self.disabled = torch.device(device), False

    def broadcast(self, tensor: torch.Tensor, src: int, stream: object = None) -> None:
        raise AssertionError("nothing may be broadcast")

    def destroy(self) -> None: ...
