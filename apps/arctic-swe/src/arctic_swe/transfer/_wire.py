"""vLLM's NCCL weight-transfer wire format, over any `Communicator` (Arctic-SWE §3.3).

Rank 0 broadcasts the weights in the order the round's `UpdateInfo` names them.
Unpacked: one broadcast per tensor. Packed: each tensor is linearised to its raw bytes and
appended to a chunk; a chunk is broadcast (as one uint8 tensor) as soon as its byte count
exceeds the buffer size, and the remainder at the end. Both sides cut chunks from the
metadata alone, so they must agree on it and on the buffer size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import torch

from arctic_swe.transfer._errors import TransferProtocolError
from arctic_swe.transfer._gloo import Communicator
from arctic_swe.transfer._payloads import UpdateInfo, dtype_name

Loader = Callable[[list[tuple[str, torch.Tensor]]], None]


def _raw_bytes(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.detach().contiguous().view(-1).view(torch.uint8)


def check_against(pairs: Sequence[tuple[str, torch.Tensor]], info: UpdateInfo) -> None:
    """Raise TransferProtocolError naming the first parameter where ``pairs`` leave ``info``.

    The receiver sizes its buffers and cuts its chunks from the metadata only, so a sender
    that strays from it would hang the group or deliver garbage; checking first sends nothing.
    """
    for index, (name, tensor) in enumerate(pairs):
        if index >= len(info.names):
            raise TransferProtocolError(
                f"sending more parameters than declared ({len(info.names)}); the first extra "
                f"is {name!r} at index {index}"
            )
        want = (info.names[index], info.dtype_names[index], info.shapes[index])
        got = (name, dtype_name(tensor.dtype), tuple(int(dim) for dim in tensor.shape))
        if got != want:
            raise TransferProtocolError(
                f"parameter {index} diverges from the declared metadata: declared {want[0]!r} "
                f"{want[1]} {list(want[2])}, sending {got[0]!r} {got[1]} {list(got[2])}"
            )
    if len(pairs) < len(info.names):
        raise TransferProtocolError(
            f"sending {len(pairs)} parameters but {len(info.names)} were declared; the first "
            f"missing is {info.names[len(pairs)]!r}"
        )


def send_weights(
    pairs: Iterable[tuple[str, torch.Tensor]],
    group: Communicator,
    *,
    packed: bool,
    buffer_size_bytes: int,
    info: UpdateInfo | None = None,
    src: int = 0,
) -> None:
    """Broadcast ordered ``(name, tensor)`` pairs from ``src`` in vLLM's wire format.

    With ``info`` (the metadata the receiver was given), the pairs are checked against it
    before anything is sent. ``buffer_size_bytes`` must equal the receiver's.
    """
    pairs = list(pairs)
    if info is not None:
        check_against(pairs, info)
    if not packed:
        for _name, tensor in pairs:
            group.broadcast(tensor.detach().contiguous(), src=src)
        return
    chunk: list[torch.Tensor] = []
    filled = 0
    for _name, tensor in pairs:
        raw = _raw_bytes(tensor)
        chunk.append(raw)
        filled += raw.numel()
        if filled > buffer_size_bytes:
            group.broadcast(torch.cat(chunk), src=src)
            chunk, filled = [], 0
    if chunk:
        group.broadcast(torch.cat(chunk), src=src)


def _unpack(
    buffer: torch.Tensor, entries: list[tuple[str, torch.dtype, tuple[int, ...], int]]
) -> list[tuple[str, torch.Tensor]]:
    out: list[tuple[str, torch.Tensor]] = []
    offset = 0
    for name, dtype, shape, size in entries:
        raw = buffer[offset : offset + size]
        # A typed view needs its byte offset aligned to the element size; copy when it is not
        # (e.g. a float32 after an odd number of bfloat16 elements).
        if offset % dtype.itemsize:
            raw = raw.clone()
        out.append((name, raw.view(dtype).view(shape)))
        offset += size
    return out


def receive_weights(
    info: UpdateInfo,
    group: Communicator,
    *,
    packed: bool,
    buffer_size_bytes: int,
    load: Loader,
    src: int = 0,
) -> None:
    """Receive one round described by ``info`` from ``src``; hand tensors to ``load`` as they land.

    ``load`` gets a list of ``(name, tensor)`` per chunk (packed) or per tensor (unpacked), in
    ``info`` order. Packed tensors are views of their chunk's receive buffer (a fresh buffer per
    chunk, so they stay valid). Tensors are on the CPU.
    """
    rows = list(zip(info.names, info.dtypes, info.shapes, info.nbytes(), strict=True))
    if not packed:
        for name, dtype, shape, _size in rows:
            tensor = torch.empty(shape, dtype=dtype)
            group.broadcast(tensor, src=src)
            load([(name, tensor)])
        return
    entries: list[tuple[str, torch.dtype, tuple[int, ...], int]] = []
    filled = 0
    for row in rows:
        entries.append(row)
        filled += row[3]
        if filled > buffer_size_bytes:
            _receive_chunk(entries, filled, group, src, load)
            entries, filled = [], 0
    if entries:
        _receive_chunk(entries, filled, group, src, load)


def _receive_chunk(
    entries: list[tuple[str, torch.dtype, tuple[int, ...], int]],
    size: int,
    group: Communicator,
    src: int,
    load: Loader,
) -> None:
    buffer = torch.empty(size, dtype=torch.uint8)
    group.broadcast(buffer, src=src)
    load(_unpack(buffer, entries))
