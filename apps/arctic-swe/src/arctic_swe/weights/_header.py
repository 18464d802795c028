"""A safetensors file's header (names, shapes, dtype names) and the weights' typed error."""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open

#: safetensors dtype names -> torch dtypes (the floating and integer ones a policy uses).
DTYPES: dict[str, torch.dtype] = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}

#: name -> (shape, safetensors dtype name), as a file's header says.
Header = dict[str, tuple[tuple[int, ...], str]]


class WeightsError(ValueError):
    """Weights are missing, unreadable, corrupt, or do not fit (unknown or missing names, a
    wrong shape, dtype or version); nothing was loaded from them."""


def header_of(file: Path) -> Header:
    """Name -> (shape, dtype name) from ``file``'s header, no tensor read; a file whose
    header does not parse or whose data is shorter than the header says is refused."""
    header: Header = {}
    try:
        with safe_open(str(file), framework="pt") as handle:
            for name in handle.keys():  # noqa: SIM118  (safe_open is not a mapping)
                piece = handle.get_slice(name)
                header[name] = (tuple(piece.get_shape()), piece.get_dtype())
    except (OSError, SafetensorError) as exc:
        raise WeightsError(f"cannot read {file}: {exc}") from exc
    return header
