"""The transfer sub-package against vLLM 0.33's own NCCL weight-transfer code (Arctic-SWE §3.3).

(a) Payloads: ours parse with vLLM's dataclasses and vLLM's parse with ours.
(b) Our sender -> vLLM's receiving code (``packed_nccl_broadcast_consumer`` and the worker's
    ``NCCLWeightTransferEngine.receive_weights``, packed and unpacked).
(c) vLLM's sending code (``packed_nccl_broadcast_producer`` and the trainer's
    ``NCCLTrainerWeightTransferEngine.send_weights``) -> our receiver.

vLLM's functions are run unchanged; only what needs a GPU is replaced. The bytes travel over
our gloo group, behind a stand-in with the NCCL communicator's ``broadcast(tensor, src, stream)``.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from dataclasses import asdict
from types import SimpleNamespace
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
from vllm.distributed.weight_transfer import nccl_engine, packed_tensor
from vllm.distributed.weight_transfer.base import ModuleSource
from vllm.distributed.weight_transfer.nccl_common import (
    NCCLWeightTransferInitInfo,
    build_worker_init_payload,
)
from vllm.distributed.weight_transfer.nccl_engine import (
    NCCLTrainerInitInfo,
    NCCLTrainerWeightTransferEngine,
    NCCLWeightTransferEngine,
    NCCLWeightTransferUpdateInfo,
)

from arctic_swe.transfer import (
    EngineReceiver,
    GlooCommunicator,
    LocalWeightSender,
    NcclInitInfo,
    TransferProtocolError,
    UpdateInfo,
    host_store,
    open_gloo_group,
    receive_weights,
    send_weights,
)

TIMEOUT_S = 30.0
# vLLM's packer warns about every tensor bigger than the buffer; the small buffers are deliberate.
pytestmark = pytest.mark.filterwarnings("ignore:Tensor .* exceeds buffer_size_bytes")
Pairs = list[tuple[str, torch.Tensor]]


# ── (a) payloads ────────────────────────────────────────────────────────────────────────────


def test_our_init_payload_parses_with_vllms_dataclass() -> None:
    ours = NcclInitInfo("10.1.2.3", 29555, 1, 2, True, 4096, 3)
    theirs = NCCLWeightTransferInitInfo(**ours.payload())
    assert asdict(theirs) == {**ours.payload(), "nccl_unique_id_b64": None}
    assert theirs.nccl_unique_id_bytes is None  # vLLM reads it as the TCP rendezvous


@pytest.mark.parametrize("packed", [True, False])
def test_vllms_worker_init_payload_parses_with_ours(packed: bool) -> None:
    trainer = NCCLTrainerInitInfo(
        master_address="127.0.0.1", master_port=29556, world_size=2, rank=0
    )
    payload = build_worker_init_payload(
        trainer, packed=packed, packed_buffer_size_bytes=8192, packed_num_buffers=2
    )
    ours = NcclInitInfo.from_payload(payload)
    assert ours.payload() == payload
    assert (ours.rank_offset, ours.packed) == (1, packed)


def test_vllms_default_worker_init_info_parses_with_ours() -> None:
    theirs = NCCLWeightTransferInitInfo(
        master_address="127.0.0.1", master_port=1234, rank_offset=1, world_size=2
    )
    payload = {k: v for k, v in asdict(theirs).items() if v is not None}
    assert NcclInitInfo.from_payload(payload).payload() == payload


def test_a_unique_id_payload_that_vllm_accepts_is_refused_by_name() -> None:
    unique_id = base64.b64encode(bytes(range(128))).decode()
    payload = {"nccl_unique_id_b64": unique_id, "rank_offset": 1, "world_size": 2}
    NCCLWeightTransferInitInfo(**payload)  # valid for vLLM (128 bytes)
    with pytest.raises(TransferProtocolError, match="only the TCP rendezvous"):
        NcclInitInfo.from_payload(payload)


def _pairs(aligned: bool = True) -> Pairs:
    # vLLM's unpacking views each tensor at its byte offset in the chunk, which torch allows
    # only at offsets aligned to the element size, so (b) keeps every size a multiple of 8.
    g = torch.Generator().manual_seed(3)
    pairs = [
        ("model.embed_tokens.weight", torch.randn(16, 8, generator=g).to(torch.bfloat16)),
        ("model.layers.0.mlp.down_proj.weight", torch.randn(8, 6, generator=g)),
        ("model.layers.0.mlp.router.bias", torch.randint(-9, 9, (5,), generator=g)),
        ("model.layers.1.big", torch.randn(300, generator=g)),  # 1200 bytes
        ("model.norm.weight", torch.randn(8, generator=g).to(torch.bfloat16)),
    ]
    if not aligned:
        pairs.insert(1, ("model.odd", torch.randn(3, generator=g).to(torch.bfloat16)))
    return pairs


def test_update_payloads_agree_both_ways() -> None:
    ours = UpdateInfo.describe(_pairs())
    theirs = NCCLWeightTransferUpdateInfo(**ours.payload())
    assert asdict(theirs) == ours.payload()
    # vLLM's own dtype naming (the trainer's) agrees with ours tensor by tensor.
    assert theirs.dtype_names == [str(t.dtype).split(".")[-1] for _, t in _pairs()]
    assert UpdateInfo.from_payload(asdict(theirs)) == ours
    assert UpdateInfo.from_payload(asdict(NCCLWeightTransferUpdateInfo())).is_empty


# ── the CPU stand-ins (conformance_support) ──────────────────────────────────────────────────


@pytest.fixture
def cpu_streams(monkeypatch: pytest.MonkeyPatch) -> None:
    patch_cpu_streams(monkeypatch)


def _in_thread(fn: Any) -> Any:
    return in_thread(fn, TIMEOUT_S * 2)


@pytest.fixture
def pair() -> Iterator[tuple[GlooCommunicator, GlooCommunicator]]:
    store = host_store("127.0.0.1", 0, world_size=2, timeout_s=TIMEOUT_S)
    join = _in_thread(lambda: open_gloo_group("127.0.0.1", store.port, 1, 2, timeout_s=TIMEOUT_S))
    rank0 = open_gloo_group("127.0.0.1", store.port, 0, 2, timeout_s=TIMEOUT_S, store=store)
    rank1 = join()
    yield rank0, rank1
    rank0.close()
    rank1.close()


def _raw(tensor: torch.Tensor) -> bytes:
    return bytes(tensor.detach().contiguous().view(-1).view(torch.uint8).tolist())


def _assert_identical(received: Pairs, sent: Pairs) -> None:
    assert [name for name, _ in received] == [name for name, _ in sent]
    for (_, got), (_, want) in zip(received, sent, strict=True):
        assert (got.dtype, got.shape) == (want.dtype, want.shape)
        assert _raw(got) == _raw(want)


# Many chunks; exactly the first two tensors' bytes (a chunk that reaches the buffer without
# exceeding it takes the next tensor too); a tensor bigger than the buffer; one chunk.
BUFFERS = [64, 256 + 192, 1000, 1 << 20]


# ── (b) our sender -> vLLM's receiver ───────────────────────────────────────────────────────


@pytest.mark.usefixtures("cpu_streams")
@pytest.mark.parametrize("buffer", BUFFERS)
def test_our_packed_send_into_vllms_packed_consumer(
    pair: tuple[GlooCommunicator, GlooCommunicator], buffer: int
) -> None:
    rank0, rank1 = pair
    pairs = _pairs()
    received: Pairs = []
    metadata = ((name, (list(t.shape), t.dtype)) for name, t in pairs)
    theirs, ours = StandInCommunicator(rank1), StandInCommunicator(rank0)
    join = _in_thread(lambda: vllm_packed_consume(metadata, theirs, buffer, received.extend))
    send_weights(
        pairs, ours, packed=True, buffer_size_bytes=buffer, info=UpdateInfo.describe(pairs)
    )
    join()
    _assert_identical(received, pairs)
    assert ours.sizes == theirs.sizes  # the same chunks, cut by each side on its own
    assert (len(ours.sizes) > 1) == (buffer < 2000)


class RecordingModel:
    """Stands for the vLLM model: ``load_weights`` is what the worker engine hands tensors to."""

    def __init__(self) -> None:
        self.loaded: Pairs = []

    def load_weights(self, weights: Pairs) -> None:
        self.loaded.extend((name, tensor.clone()) for name, tensor in weights)


def _weights(version: int) -> Pairs:
    return [
        (name, tensor * version if tensor.is_floating_point() else tensor + version)
        for name, tensor in _pairs()
    ]


@pytest.mark.usefixtures("cpu_streams")
@pytest.mark.parametrize(("packed", "buffer"), [(True, 64), (True, 1 << 20), (False, 64)])
def test_our_weight_sender_into_vllms_worker_engine(
    monkeypatch: pytest.MonkeyPatch, packed: bool, buffer: int
) -> None:
    # vLLM's worker joins through NCCL; here its join returns the stand-in over our gloo group
    # at the rank and address vLLM parsed from our payload.
    def join_group(
        info: NCCLWeightTransferInitInfo, _parallel_config: object
    ) -> StandInCommunicator:
        assert info.master_address is not None
        assert info.master_port is not None
        return StandInCommunicator(
            open_gloo_group(
                info.master_address,
                info.master_port,
                info.rank_offset,
                info.world_size,
                timeout_s=TIMEOUT_S,
            )
        )

    monkeypatch.setattr(nccl_engine, "worker_init_process_group", join_group)
    model = RecordingModel()
    worker = NCCLWeightTransferEngine(
        nccl_engine.WeightTransferConfig(backend="nccl"),
        SimpleNamespace(parallel_config=None, model_config=None),  # type: ignore[arg-type]
        torch.device("cpu"),
        model,  # type: ignore[arg-type]
    )
    sender = LocalWeightSender(
        _weights, packed=packed, buffer_size_bytes=buffer, timeout_s=TIMEOUT_S
    )
    init_payload = sender.init_payload("vllm-0")
    join = _in_thread(lambda: worker.init_transfer_engine(worker.parse_init_info(init_payload)))
    asyncio.run(sender.connect("vllm-0"))
    join()
    assert (worker.packed, worker.packed_buffer_size_bytes) == (packed, buffer)

    for version, payload in ((1, None), (2, {})):  # round 2: empty update_info, vLLM reuses
        update = asyncio.run(sender.update_info(version)) if payload is None else payload
        join = _in_thread(
            lambda update=update: worker.receive_weights(worker.parse_update_info(update))
        )
        asyncio.run(sender.send("vllm-0", version))
        join()
        _assert_identical(model.loaded, _weights(version))
        model.loaded.clear()
    sender.close()
    worker.shutdown()


# ── (c) vLLM's sender -> our receiver ───────────────────────────────────────────────────────


@pytest.mark.usefixtures("cpu_streams")
@pytest.mark.parametrize("buffer", BUFFERS)
@pytest.mark.parametrize("aligned", [True, False])
def test_vllms_packed_producer_into_our_receiver(
    pair: tuple[GlooCommunicator, GlooCommunicator], buffer: int, aligned: bool
) -> None:
    rank0, rank1 = pair
    pairs = _pairs(aligned)
    received: Pairs = []
    info = UpdateInfo.describe(pairs)
    join = _in_thread(
        lambda: receive_weights(
            info, rank1, packed=True, buffer_size_bytes=buffer, load=received.extend
        )
    )
    stand_in = StandInCommunicator(rank0)
    packed_tensor.packed_nccl_broadcast_producer(
        iterator=iter(pairs),
        group=stand_in,
        src=0,
        post_iter_func=lambda item: item[1],
        buffer_size_bytes=buffer,
        num_buffers=2,
    )
    join()
    _assert_identical(received, pairs)
    # And our sender cuts the same chunks as vLLM's producer.
    ours = StandInCommunicator(rank0)
    join = _in_thread(
        lambda: receive_weights(
            info, rank1, packed=True, buffer_size_bytes=buffer, load=lambda _: None
        )
    )
    send_weights(pairs, ours, packed=True, buffer_size_bytes=buffer)
    join()
    assert ours.sizes == stand_in.sizes


class ReceiverClient:
    """vLLM's ``VLLMWeightSyncClient``, answered in-process by our EngineReceiver."""

    def __init__(self, receiver: EngineReceiver) -> None:
        self.receiver = receiver
        self.updates: list[Any] = []
        self.rounds: list[dict[str, torch.Tensor]] = []

    def init_weight_transfer_engine(self, init_info: dict[str, Any]) -> None:
        self.receiver.join(init_info)

    def start_weight_update(self) -> None: ...

    def update_weights(self, update_info: Any) -> None:
        self.updates.append(update_info)
        self.rounds.append(self.receiver.receive(update_info))

    def finish_weight_update(self, weight_version: str | None = None) -> None: ...


class Policy(torch.nn.Module):
    def __init__(self, pairs: Pairs) -> None:
        super().__init__()
        self.names = [name for name, _ in pairs]
        for index, (_, tensor) in enumerate(pairs):
            self.register_parameter(
                f"p{index}", torch.nn.Parameter(tensor.clone(), requires_grad=False)
            )


@pytest.mark.usefixtures("cpu_streams")
@pytest.mark.parametrize(("packed", "buffer"), [(True, 64), (True, 1 << 20), (False, 64)])
def test_vllms_trainer_engine_into_our_engine_receiver(
    monkeypatch: pytest.MonkeyPatch, packed: bool, buffer: int
) -> None:
    store = host_store("127.0.0.1", 0, world_size=2, timeout_s=TIMEOUT_S)

    # vLLM's trainer opens its NCCL endpoint here; the stand-in rides our gloo group instead.
    def open_endpoint(info: NCCLTrainerInitInfo) -> StandInCommunicator:
        assert info.master_port == store.port
        return StandInCommunicator(
            open_gloo_group(
                info.master_address,
                info.master_port,
                0,
                info.world_size,
                timeout_s=TIMEOUT_S,
                store=store,
            )
        )

    monkeypatch.setattr(nccl_engine, "open_trainer_endpoint", open_endpoint)
    policy = Policy(_pairs(aligned=False))
    client = ReceiverClient(EngineReceiver(timeout_s=TIMEOUT_S))
    trainer = NCCLTrainerWeightTransferEngine.trainer_init(
        NCCLTrainerInitInfo(
            master_address="127.0.0.1",
            master_port=store.port,
            world_size=2,
            packed=packed,
            packed_buffer_size_bytes=buffer,
            rank=0,
        ),
        client=client,  # type: ignore[arg-type]
        source=ModuleSource(policy),
    )
    trainer.send_weights()
    with torch.no_grad():
        for parameter in policy.parameters():
            parameter.add_(1)
    trainer.send_weights()  # unchanged metadata: vLLM sends an empty update_info
    assert UpdateInfo.from_payload(client.updates[1]).is_empty
    originals = [(f"p{i}", t) for i, (_, t) in enumerate(_pairs(aligned=False))]
    _assert_identical(list(client.rounds[0].items()), originals)
    updated = [(name, p.detach()) for name, p in policy.named_parameters()]
    _assert_identical(list(client.rounds[1].items()), updated)
    assert _raw(client.rounds[1]["p0"]) != _raw(originals[0][1])
    trainer.shutdown()
    client.receiver.close()
