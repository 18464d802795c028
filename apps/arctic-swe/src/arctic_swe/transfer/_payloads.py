"""The JSON payloads of vLLM's NCCL weight transfer (Arctic-SWE §3.3).

`NcclInitInfo` is the body of ``/init_weight_transfer_engine``'s ``init_info`` and
`UpdateInfo` the body of ``/update_weights``' ``update_info``. Both parse the keys vLLM's own
dataclasses accept, with vLLM's defaults, and emit payloads vLLM's dataclasses accept.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from arctic_swe.transfer._errors import TransferProtocolError

# vLLM's defaults for the packed wire geometry (its worker-side init info defaults to unpacked).
DEFAULT_BUFFER_SIZE_BYTES = 1024 * 1024 * 1024
DEFAULT_NUM_BUFFERS = 2

_INIT_KEYS = frozenset(
    {
        "master_address",
        "master_port",
        "rank_offset",
        "world_size",
        "nccl_unique_id_b64",
        "packed",
        "packed_buffer_size_bytes",
        "packed_num_buffers",
    }
)
_UPDATE_KEYS = ("names", "dtype_names", "shapes")


def _mapping(payload: object, what: str, allowed: Iterable[str]) -> Mapping[str, Any]:
    if not isinstance(payload, Mapping):
        raise TransferProtocolError(f"{what} must be a JSON object, got {type(payload).__name__}")
    # vLLM builds its dataclass from the keys, so an unknown key is refused there too.
    unknown = sorted(str(key) for key in payload if key not in set(allowed))
    if unknown:
        raise TransferProtocolError(f"{what} has unknown field(s) {unknown}")
    return payload


def _int(value: object, field: str, *, minimum: int) -> int:
    # bool is an int subclass; JSON true must not pass for a port or a rank.
    if isinstance(value, bool) or not isinstance(value, int):
        raise TransferProtocolError(f"{field} must be an integer, got {value!r}")
    if value < minimum:
        raise TransferProtocolError(f"{field} must be >= {minimum}, got {value}")
    return value


def dtype_name(dtype: torch.dtype) -> str:
    """vLLM's wire name of a dtype: ``torch.bfloat16`` -> ``"bfloat16"``."""
    return str(dtype).split(".")[-1]


def resolve_dtype(name: object) -> torch.dtype:
    """The torch dtype a wire name denotes, resolved as vLLM does (an attribute of ``torch``)."""
    resolved = getattr(torch, name, None) if isinstance(name, str) else None
    if not isinstance(resolved, torch.dtype):
        raise TransferProtocolError(f"dtype name {name!r} is not a torch dtype")
    return resolved


@dataclass(frozen=True)
class NcclInitInfo:
    """Worker-side init info of vLLM's NCCL weight transfer, TCP rendezvous only (Arctic-SWE §3.3).

    The trainer is rank 0 and hosts the TCPStore at ``master_address:master_port``; the engine
    joins at ``rank_offset``. ``packed*`` fix the wire geometry both sides must agree on.
    """

    master_address: str
    master_port: int
    rank_offset: int
    world_size: int
    packed: bool = False
    packed_buffer_size_bytes: int = DEFAULT_BUFFER_SIZE_BYTES
    packed_num_buffers: int = DEFAULT_NUM_BUFFERS

    def __post_init__(self) -> None:
        if not isinstance(self.master_address, str) or not self.master_address:
            raise TransferProtocolError(
                f"master_address must be a non-empty string, got {self.master_address!r}"
            )
        if _int(self.master_port, "master_port", minimum=1) > 65535:
            raise TransferProtocolError(f"master_port must be <= 65535, got {self.master_port}")
        world_size = _int(self.world_size, "world_size", minimum=2)
        # Rank 0 is the single sender (the trainer); an engine sits after it.
        if not 1 <= _int(self.rank_offset, "rank_offset", minimum=1) < world_size:
            raise TransferProtocolError(
                f"rank_offset must lie in [1, world_size={world_size}), got {self.rank_offset}"
            )
        if not isinstance(self.packed, bool):
            raise TransferProtocolError(f"packed must be a boolean, got {self.packed!r}")
        _int(self.packed_buffer_size_bytes, "packed_buffer_size_bytes", minimum=1)
        _int(self.packed_num_buffers, "packed_num_buffers", minimum=1)

    def payload(self) -> dict[str, Any]:
        """The ``init_info`` JSON object (vLLM's TCP-mode payload: no unique-id key)."""
        return {
            "master_address": self.master_address,
            "master_port": self.master_port,
            "rank_offset": self.rank_offset,
            "world_size": self.world_size,
            "packed": self.packed,
            "packed_buffer_size_bytes": self.packed_buffer_size_bytes,
            "packed_num_buffers": self.packed_num_buffers,
        }

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> NcclInitInfo:
        """Parse an ``init_info`` object; TransferProtocolError names what is wrong."""
        data = _mapping(payload, "init_info", _INIT_KEYS)
        # vLLM treats an empty unique id as absent, so only a real one is refused.
        if data.get("nccl_unique_id_b64"):
            raise TransferProtocolError(
                "init_info carries nccl_unique_id_b64: this engine supports only the TCP "
                "rendezvous (master_address + master_port), not a pre-shared NCCL unique id"
            )
        missing = [key for key in ("rank_offset", "world_size") if key not in data]
        if missing:
            raise TransferProtocolError(f"init_info is missing required field(s) {missing}")
        if data.get("master_address") is None or data.get("master_port") is None:
            raise TransferProtocolError(
                "init_info needs both master_address and master_port (got "
                f"master_address={data.get('master_address')!r}, "
                f"master_port={data.get('master_port')!r})"
            )
        kwargs = {key: value for key, value in data.items() if key != "nccl_unique_id_b64"}
        return cls(**kwargs)


@dataclass(frozen=True)
class UpdateInfo:
    """Per-round parameter metadata of vLLM's NCCL weight transfer (Arctic-SWE §3.3).

    Names, dtype names and shapes in broadcast order. All three empty means "the previous
    round's metadata again", as vLLM reads it.
    """

    names: tuple[str, ...] = ()
    dtype_names: tuple[str, ...] = ()
    shapes: tuple[tuple[int, ...], ...] = ()

    def __post_init__(self) -> None:
        count = len(self.names)
        for field in ("dtype_names", "shapes"):
            if len(getattr(self, field)) != count:
                raise TransferProtocolError(
                    f"update_info.{field} has {len(getattr(self, field))} entries but names "
                    f"has {count}"
                )
        seen: set[str] = set()
        for name, dtype, shape in zip(self.names, self.dtype_names, self.shapes, strict=True):
            if not isinstance(name, str):
                raise TransferProtocolError(f"parameter name {name!r} is not a string")
            if name in seen:  # a receiver keyed by name would silently drop one of them
                raise TransferProtocolError(f"parameter {name!r} appears twice in update_info")
            seen.add(name)
            resolve_dtype(dtype)
            if not isinstance(shape, tuple):
                raise TransferProtocolError(f"shape of {name!r} must be a sequence, got {shape!r}")
            for dim in shape:
                _int(dim, f"shape of {name!r}", minimum=0)

    @property
    def is_empty(self) -> bool:
        """True for the "reuse the previous round's metadata" form."""
        return not self.names

    @property
    def dtypes(self) -> tuple[torch.dtype, ...]:
        return tuple(resolve_dtype(name) for name in self.dtype_names)

    def nbytes(self) -> tuple[int, ...]:
        """Each parameter's size on the wire, in bytes."""
        sizes = []
        for dtype, shape in zip(self.dtypes, self.shapes, strict=True):
            count = 1
            for dim in shape:
                count *= dim
            sizes.append(count * dtype.itemsize)
        return tuple(sizes)

    def payload(self) -> dict[str, Any]:
        """The ``update_info`` JSON object."""
        return {
            "names": list(self.names),
            "dtype_names": list(self.dtype_names),
            "shapes": [list(shape) for shape in self.shapes],
        }

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> UpdateInfo:
        """Parse an ``update_info`` object (missing lists default to empty, as in vLLM)."""
        data = _mapping(payload, "update_info", _UPDATE_KEYS)
        lists = {}
        for key in _UPDATE_KEYS:
            value = data.get(key, [])
            if isinstance(value, str | bytes) or not isinstance(value, list | tuple):
                raise TransferProtocolError(f"update_info.{key} must be a list, got {value!r}")
            lists[key] = value
        shapes = []
        for shape in lists["shapes"]:
            if isinstance(shape, str | bytes) or not isinstance(shape, list | tuple):
                raise TransferProtocolError(f"each shape must be a list of ints, got {shape!r}")
            shapes.append(tuple(shape))
        return cls(tuple(lists["names"]), tuple(lists["dtype_names"]), tuple(shapes))

    @classmethod
    def describe(cls, pairs: Iterable[tuple[str, torch.Tensor]]) -> UpdateInfo:
        """The metadata of ordered ``(name, tensor)`` pairs, with vLLM's dtype naming."""
        names, dtypes, shapes = [], [], []
        for name, tensor in pairs:
            names.append(name)
            dtypes.append(dtype_name(tensor.dtype))
            shapes.append(tuple(int(dim) for dim in tensor.shape))
        return cls(tuple(names), tuple(dtypes), tuple(shapes))
