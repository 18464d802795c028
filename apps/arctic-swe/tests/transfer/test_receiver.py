from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch

from arctic_swe.transfer import (
    EngineReceiver,
    LocalWeightSender,
    TransferProtocolError,
    TransferTimeoutError,
)

from .conftest import in_thread, raw


def _weights(version: int) -> list[tuple[str, torch.Tensor]]:
    generator = torch.Generator().manual_seed(version)
    return [
        ("model.embed_tokens.weight", torch.randn(32, 8, generator=generator).to(torch.bfloat16)),
        ("model.layers.0.mlp.up_proj.weight", torch.randn(16, 8, generator=generator)),
        ("model.layers.0.step", torch.tensor([version], dtype=torch.int64)),
    ]


def _joined(receiver: EngineReceiver, **kwargs: object) -> LocalWeightSender:
    sender = LocalWeightSender(_weights, timeout_s=30.0, **kwargs)  # type: ignore[arg-type]
    payload = sender.init_payload("e0")
    join = in_thread(lambda: receiver.join(payload))
    asyncio.run(sender.connect("e0"))
    join()
    return sender


def _round(
    sender: LocalWeightSender,
    receiver: EngineReceiver,
    version: int,
    payload: dict[str, Any] | None = None,
) -> dict[str, torch.Tensor]:
    update = payload if payload is not None else asyncio.run(sender.update_info(version))
    join = in_thread(lambda: receiver.receive(update))
    asyncio.run(sender.send("e0", version))
    return join()  # type: ignore[no-any-return]


def _assert_version(received: dict[str, torch.Tensor], version: int) -> None:
    want = _weights(version)
    assert list(received) == [name for name, _ in want]
    for name, tensor in want:
        assert received[name].device.type == "cpu"
        assert (received[name].dtype, received[name].shape) == (tensor.dtype, tensor.shape)
        assert raw(received[name]) == raw(tensor)


@pytest.mark.parametrize(("packed", "buffer"), [(True, 100), (True, 1 << 20), (False, 100)])
def test_rounds_deliver_the_trainers_weights(packed: bool, buffer: int) -> None:
    receiver = EngineReceiver(timeout_s=30.0)
    sender = _joined(receiver, packed=packed, buffer_size_bytes=buffer)
    assert receiver.init_info is not None
    assert (receiver.init_info.packed, receiver.init_info.packed_buffer_size_bytes) == (
        packed,
        buffer,
    )
    _assert_version(_round(sender, receiver, 1), 1)
    _assert_version(_round(sender, receiver, 2), 2)
    sender.close()
    receiver.close()


def test_an_empty_update_reuses_the_previous_metadata() -> None:
    receiver = EngineReceiver(timeout_s=30.0)
    sender = _joined(receiver, buffer_size_bytes=64)
    _assert_version(_round(sender, receiver, 1), 1)
    _assert_version(_round(sender, receiver, 2, payload={}), 2)
    _assert_version(_round(sender, receiver, 3, {"names": [], "dtype_names": [], "shapes": []}), 3)
    sender.close()
    receiver.close()


def test_an_empty_update_before_any_metadata_receives_nothing() -> None:
    receiver = EngineReceiver(timeout_s=30.0)
    sender = _joined(receiver)
    assert receiver.receive({}) == {}  # as vLLM: nothing to reuse, nothing to receive
    sender.close()
    receiver.close()


def test_receive_with_nobody_sending_times_out() -> None:
    receiver = EngineReceiver(timeout_s=1.0)
    sender = _joined(receiver)
    update = asyncio.run(sender.update_info(1))
    with pytest.raises(TransferTimeoutError):
        receiver.receive(update)
    sender.close()
    receiver.close()


def test_receive_before_join_is_refused() -> None:
    with pytest.raises(TransferProtocolError, match="before init_weight_transfer_engine"):
        EngineReceiver().receive({"names": ["a"], "dtype_names": ["float32"], "shapes": [[1]]})


def test_join_refuses_the_unique_id_rendezvous() -> None:
    with pytest.raises(TransferProtocolError, match="only the TCP rendezvous"):
        EngineReceiver().join({"nccl_unique_id_b64": "QUFB", "rank_offset": 1, "world_size": 2})


def test_a_bad_update_payload_is_refused_before_any_transfer() -> None:
    receiver = EngineReceiver(timeout_s=30.0)
    sender = _joined(receiver)
    with pytest.raises(TransferProtocolError, match="dtype_names"):
        receiver.receive({"names": ["a"], "dtype_names": [], "shapes": [[1]]})
    _assert_version(_round(sender, receiver, 4), 4)  # the group is still in step
    sender.close()
    receiver.close()


_ENGINE = textwrap.dedent(
    """
    import json, sys, torch
    from arctic_swe.transfer import EngineReceiver
    receiver = EngineReceiver(timeout_s=60.0)
    receiver.join(json.loads(sys.argv[1]))
    print("joined", flush=True)
    received = receiver.receive(json.loads(sys.stdin.readline()))
    torch.save(received, sys.argv[2])
    receiver.close()
    """
)


def test_sender_and_receiver_in_two_processes(tmp_path: Path) -> None:
    sender = LocalWeightSender(_weights, timeout_s=60.0, buffer_size_bytes=300)
    out = tmp_path / "received.pt"
    engine = subprocess.Popen(
        [sys.executable, "-c", _ENGINE, json.dumps(sender.init_payload("e0")), str(out)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        asyncio.run(sender.connect("e0"))
        assert engine.stdout is not None
        assert engine.stdout.readline().strip() == "joined"
        assert engine.stdin is not None
        engine.stdin.write(json.dumps(asyncio.run(sender.update_info(7))) + "\n")
        engine.stdin.flush()
        asyncio.run(sender.send("e0", 7))
        assert engine.wait(timeout=60) == 0
    finally:
        engine.kill()
        sender.close()
    _assert_version(torch.load(out), 7)


def test_metadata_that_disagrees_with_the_sent_bytes_is_a_typed_error() -> None:
    receiver = EngineReceiver(timeout_s=30.0)
    sender = _joined(receiver)  # packed, one chunk: the receiver drains it and reports
    update = asyncio.run(sender.update_info(1))
    update["shapes"][1] = [15, 8]
    with pytest.raises(TransferProtocolError, match="disagree"):
        _round(sender, receiver, 1, update)
    _assert_version(_round(sender, receiver, 2), 2)  # still in step afterwards
    sender.close()
    receiver.close()
