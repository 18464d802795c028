"""Triton launch configuration shared by the kernels: interpreter switch, the pruned autotune
set and its environment override, and the chunk tables of native variable-length batches.

Autotune set: at most four configurations per kernel (the compile budget of a short GPU window
is minutes, and every configuration is one more compilation per shape key). Override with
``HYBRID_NUMERICS_TRITON_CONFIGS="BV:num_warps:num_stages,..."``, e.g. ``"64:4:2"`` for a single
configuration (no tuning at all). Under ``TRITON_INTERPRET=1`` there is exactly one.
"""

from __future__ import annotations

import itertools
import os

import torch
import triton

INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"
CONFIG_ENV = "HYBRID_NUMERICS_TRITON_CONFIGS"
#: The default pruned set: (BV, num_warps, num_stages).
DEFAULT_CONFIGS = ((32, 4, 2), (64, 4, 2), (32, 8, 3), (64, 8, 3))
MAX_CONFIGS = 4


def parse_configs(spec: str) -> list[tuple[int, int, int]]:
    """``"BV:warps:stages,..."`` -> tuples; raises ``ValueError`` with the offending item."""
    out: list[tuple[int, int, int]] = []
    for item in (part.strip() for part in spec.split(",")):
        fields = item.split(":")
        if len(fields) != 3 or not all(f.isdigit() for f in fields):
            raise ValueError(f"{CONFIG_ENV}: {item!r} is not BV:num_warps:num_stages")
        bv, warps, stages = (int(f) for f in fields)
        if bv < 16 or bv & (bv - 1) or warps not in (1, 2, 4, 8, 16) or not 1 <= stages <= 8:
            raise ValueError(f"{CONFIG_ENV}: {item!r}: BV a power of two >= 16, warps 1..16")
        out.append((bv, warps, stages))
    if not 1 <= len(out) <= MAX_CONFIGS:
        raise ValueError(f"{CONFIG_ENV}: between 1 and {MAX_CONFIGS} configs, got {len(out)}")
    return out


def autotune_configs() -> list[triton.Config]:
    """The configs every autotuned kernel of the package uses (see the module docstring)."""
    if INTERPRET:  # the interpreter is slow and there is nothing to tune
        return [triton.Config({"BV": 16}, num_warps=1)]
    spec = os.environ.get(CONFIG_ENV)
    chosen = parse_configs(spec) if spec else list(DEFAULT_CONFIGS)
    return [triton.Config({"BV": bv}, num_warps=w, num_stages=s) for bv, w, s in chosen]


def chunk_tables(
    offsets: list[int] | None, B: int, T: int, BT: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """``(chunk_index [NT, 2] int32, chunk_offsets [N + 1] int32, NT)`` for ``N`` sequences.

    Row ``r`` of ``chunk_index`` is ``(sequence n, chunk c within n)``, sequence-major, so row
    ``chunk_offsets[n] + c`` is chunk ``c`` of sequence ``n``: the per-chunk state buffer and
    the grids of the chunk-parallel kernels use this one numbering. Dense input (``offsets is
    None``): ``B`` sequences of ``T`` tokens. Packed input: ``offsets`` = the host copy of
    ``cu_seqlens``; each sequence gets ``ceil(len / BT)`` chunks, none padded to the longest.
    """
    if offsets is None:
        per_seq = [-(-T // BT)] * B
    else:
        per_seq = [-(-(b - a) // BT) for a, b in itertools.pairwise(offsets)]
    starts = [0]
    for count in per_seq:
        starts.append(starts[-1] + count)
    pairs = [(n, c) for n, count in enumerate(per_seq) for c in range(count)]
    index = torch.tensor(pairs, dtype=torch.int32).reshape(-1, 2)
    return index.to(device), torch.tensor(starts, dtype=torch.int32).to(device), starts[-1]
