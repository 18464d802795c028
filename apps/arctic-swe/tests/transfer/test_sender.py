from __future__ import annotations

import asyncio
import socket

import pytest
import torch

from arctic_swe.transfer import (
    EngineReceiver,
    LocalWeightSender,
    NcclInitInfo,
    TransferProtocolError,
    WeightSender,
    base_port,
)

from .conftest import in_thread, raw


@pytest.fixture
def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class CountingWeights:
    def __init__(self) -> None:
        self.calls: list[int] = []

    def __call__(self, version: int) -> list[tuple[str, torch.Tensor]]:
        self.calls.append(version)
        return [("w", torch.full((4, 4), float(version))), ("b", torch.arange(3) + version)]


def test_init_info_is_a_valid_tcp_payload_with_the_trainer_at_rank_0() -> None:
    sender = LocalWeightSender(CountingWeights(), host="127.0.0.1", buffer_size_bytes=4096)
    payload = sender.init_payload("e0")
    info = NcclInitInfo.from_payload(payload)
    assert (info.rank_offset, info.world_size, info.packed) == (1, 2, True)
    assert info.packed_buffer_size_bytes == 4096
    assert sender.init_payload("e0") == payload  # stable until connected
    assert sender.init_payload("e1")["master_port"] != payload["master_port"]
    assert isinstance(sender, WeightSender)
    sender.close()


def test_base_port_picker_numbers_engines_in_order() -> None:
    picker = base_port(31000)
    assert [picker(i) for i in range(3)] == [31000, 31001, 31002]


def test_connect_and_send_need_their_predecessors() -> None:
    sender = LocalWeightSender(CountingWeights())
    with pytest.raises(TransferProtocolError, match="before init_info"):
        asyncio.run(sender.connect("e9"))
    with pytest.raises(TransferProtocolError, match="before connect"):
        asyncio.run(sender.send("e9", 1))


def test_engines_refresh_independently_and_weights_are_read_once_per_version() -> None:
    weights = CountingWeights()
    sender = LocalWeightSender(weights, timeout_s=30.0, buffer_size_bytes=16)
    receivers = {engine: EngineReceiver(timeout_s=30.0) for engine in ("e0", "e1")}

    async def refresh(engine: str, version: int) -> dict[str, torch.Tensor]:
        # The order HttpEngine uses: the engine's route and the sender's broadcast run together,
        # and the broadcast may start before update_info has been computed.
        async def route() -> dict[str, torch.Tensor]:
            update = await sender.update_info(version)
            return await asyncio.to_thread(receivers[engine].receive, update)

        received, _ = await asyncio.gather(route(), sender.send(engine, version))
        return received

    async def scenario() -> None:
        for engine, receiver in receivers.items():
            payload = sender.init_payload(engine)
            await asyncio.gather(sender.connect(engine), asyncio.to_thread(receiver.join, payload))
        both = await asyncio.gather(refresh("e0", 5), refresh("e1", 5))
        alone = await refresh("e1", 6)  # e0 stays at 5
        for received in both:
            assert raw(received["w"]) == raw(torch.full((4, 4), 5.0))
        assert torch.equal(alone["b"], torch.arange(3) + 6)

    asyncio.run(scenario())
    assert weights.calls == [5, 6]
    sender.close()
    for receiver in receivers.values():
        receiver.close()


@pytest.mark.parametrize("fixed_port", [False, True])
def test_a_second_join_gets_a_fresh_group(fixed_port: bool, unused_port: int) -> None:
    ports = base_port(unused_port) if fixed_port else None
    sender = LocalWeightSender(CountingWeights(), timeout_s=30.0, ports=ports)
    receiver = EngineReceiver(timeout_s=30.0)
    seen = []
    for _ in range(2):
        payload = sender.init_payload("e0")
        seen.append(payload["master_port"])
        join = in_thread(lambda payload=payload: receiver.join(payload))
        asyncio.run(sender.connect("e0"))
        join()
    assert (seen[0] == seen[1]) == fixed_port
    update = asyncio.run(sender.update_info(1))
    join = in_thread(lambda: receiver.receive(update))
    asyncio.run(sender.send("e0", 1))
    assert torch.equal(join()["b"], torch.arange(3) + 1)
    sender.close()
    receiver.close()
