from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from arctic_swe.transfer import (
    GlooCommunicator,
    TransferProtocolError,
    UpdateInfo,
    receive_weights,
    send_weights,
)

from .conftest import Recorder, Replay, in_thread, raw

Pairs = list[tuple[str, torch.Tensor]]


def _tensor(dtype: torch.dtype, shape: tuple[int, ...], seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    bits = torch.randint(
        0, 256, (max(1, torch.Size(shape).numel()) * dtype.itemsize,), generator=generator
    )
    data = bits.to(torch.uint8)
    if dtype is torch.bool:
        data = data % 2  # only 0/1 bytes are valid booleans
    return data[: torch.Size(shape).numel() * dtype.itemsize].view(dtype).reshape(shape)


pairs_strategy = st.lists(
    st.tuples(
        st.sampled_from(
            [torch.bfloat16, torch.float32, torch.int64, torch.float16, torch.uint8, torch.bool]
        ),
        st.lists(st.integers(0, 6), max_size=3).map(tuple),
        st.integers(0, 2**31),
    ),
    max_size=8,
).map(lambda rows: [(f"p{i}", _tensor(d, s, seed)) for i, (d, s, seed) in enumerate(rows)])


def _round_trip(
    pairs: Pairs, *, packed: bool, buffer_size_bytes: int
) -> tuple[Pairs, list[torch.Tensor]]:
    recorder = Recorder()
    info = UpdateInfo.describe(pairs)
    send_weights(pairs, recorder, packed=packed, buffer_size_bytes=buffer_size_bytes, info=info)
    replay = Replay(recorder.sent)
    received: Pairs = []
    receive_weights(
        info, replay, packed=packed, buffer_size_bytes=buffer_size_bytes, load=received.extend
    )
    assert not replay.pending, "the receiver left broadcasts unread"
    return received, recorder.sent


@settings(max_examples=150, deadline=None)
@given(pairs_strategy, st.integers(1, 200))
def test_packed_and_unpacked_deliver_bit_identical_tensors(pairs: Pairs, buffer_size: int) -> None:
    for packed in (True, False):
        received, _ = _round_trip(pairs, packed=packed, buffer_size_bytes=buffer_size)
        assert [n for n, _ in received] == [n for n, _ in pairs]
        for (_, want), (_, got) in zip(pairs, received, strict=True):
            assert (got.dtype, got.shape) == (want.dtype, want.shape)
            assert raw(got) == raw(want)


def _chunk_sizes(byte_sizes: list[int], buffer_size: int) -> list[int]:
    pairs = [(f"p{i}", torch.zeros(n, dtype=torch.uint8)) for i, n in enumerate(byte_sizes)]
    _, sent = _round_trip(pairs, packed=True, buffer_size_bytes=buffer_size)
    assert all(t.dtype is torch.uint8 and t.dim() == 1 for t in sent)
    return [t.numel() for t in sent]


@pytest.mark.parametrize(
    ("sizes", "buffer", "chunks"),
    [
        ([4, 4, 4], 8, [12]),  # 8 bytes do not exceed 8: the third tensor joins before the flush
        ([4, 4, 4], 7, [8, 4]),  # flushed as soon as the count exceeds the buffer
        ([4, 4, 4, 4], 3, [4, 4, 4, 4]),
        ([100, 1, 1], 10, [100, 2]),  # a tensor bigger than the buffer is a chunk of its own
        ([1, 100, 1], 10, [101, 1]),
        ([5], 5, [5]),
        ([], 5, []),
    ],
)
def test_chunk_boundaries(sizes: list[int], buffer: int, chunks: list[int]) -> None:
    assert _chunk_sizes(sizes, buffer) == chunks


def test_unpacked_sends_one_broadcast_per_tensor_in_order() -> None:
    pairs = [("b", torch.ones(2, 3, dtype=torch.bfloat16)), ("a", torch.arange(3))]
    _, sent = _round_trip(pairs, packed=False, buffer_size_bytes=1)
    assert [(t.dtype, tuple(t.shape)) for t in sent] == [
        (torch.bfloat16, (2, 3)),
        (torch.int64, (3,)),
    ]


def test_misaligned_offsets_in_a_chunk_still_unpack() -> None:
    # 1 bfloat16 element (2 bytes) puts the float32 at byte offset 2 of the chunk.
    pairs = [("h", torch.tensor([1.5], dtype=torch.bfloat16)), ("f", torch.tensor([3.25, -1.0]))]
    received, sent = _round_trip(pairs, packed=True, buffer_size_bytes=1024)
    assert len(sent) == 1
    assert torch.equal(received[1][1], pairs[1][1])


def test_non_contiguous_tensors_travel_by_value() -> None:
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    pairs = [("t", base.t())]
    for packed in (True, False):
        received, _ = _round_trip(pairs, packed=packed, buffer_size_bytes=16)
        assert torch.equal(received[0][1], base.t())


def _pairs() -> Pairs:
    return [
        ("a", torch.zeros(2, dtype=torch.bfloat16)),
        ("b", torch.zeros(3)),
        ("c", torch.zeros(1)),
    ]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda p: [p[0], ("x", p[1][1]), p[2]], "parameter 1 .*declared 'b'.*sending 'x'"),
        (lambda p: [p[0], ("b", p[1][1].double()), p[2]], "parameter 1 .*float32.*float64"),
        (lambda p: [p[0], ("b", torch.zeros(4)), p[2]], r"parameter 1 .*\[3\].*\[4\]"),
        (lambda p: [p[1], p[0], p[2]], "parameter 0 .*declared 'a'.*sending 'b'"),
        (lambda p: [*p, ("d", torch.zeros(1))], "first extra is 'd'"),
        (lambda p: p[:2], "first missing is 'c'"),
    ],
)
def test_sender_refuses_pairs_that_leave_the_declared_metadata(mutate, message) -> None:  # type: ignore[no-untyped-def]
    declared = UpdateInfo.describe(_pairs())
    recorder = Recorder()
    with pytest.raises(TransferProtocolError, match=message):
        send_weights(mutate(_pairs()), recorder, packed=True, buffer_size_bytes=4, info=declared)
    assert recorder.sent == [], "nothing may be sent once the pairs diverge"


@pytest.mark.parametrize("packed", [True, False])
def test_over_a_real_gloo_group(
    pair: tuple[GlooCommunicator, GlooCommunicator], packed: bool
) -> None:
    rank0, rank1 = pair
    pairs = [
        ("embed", torch.randn(64, 16).to(torch.bfloat16)),
        ("norm", torch.randn(16)),
        ("count", torch.arange(5)),
        ("big", torch.randn(1000)),  # 4000 bytes: bigger than the buffer
        ("empty", torch.zeros(0, 3)),
    ]
    info = UpdateInfo.describe(pairs)
    received: Pairs = []
    join = in_thread(
        lambda: receive_weights(
            info, rank1, packed=packed, buffer_size_bytes=1500, load=received.extend
        )
    )
    send_weights(pairs, rank0, packed=packed, buffer_size_bytes=1500, info=info)
    join()
    assert [n for n, _ in received] == [n for n, _ in pairs]
    assert all(raw(got) == raw(want) for (_, got), (_, want) in zip(received, pairs, strict=True))


def test_sides_that_disagree_on_the_buffer_size_get_a_typed_error(
    pair: tuple[GlooCommunicator, GlooCommunicator],
) -> None:
    rank0, rank1 = pair
    pairs = [("a", torch.zeros(10)), ("b", torch.zeros(10))]
    info = UpdateInfo.describe(pairs)
    join = in_thread(
        lambda: receive_weights(info, rank1, packed=True, buffer_size_bytes=8, load=lambda _: None)
    )
    send_weights(pairs, rank0, packed=True, buffer_size_bytes=1 << 20, info=info)  # one chunk
    with pytest.raises(TransferProtocolError, match="disagree on the metadata or the buffer size"):
        join()
