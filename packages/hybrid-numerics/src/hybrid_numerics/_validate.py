"""Input validation shared by every Gated DeltaNet entry point.

Everything here runs before any arithmetic: a bad call raises :class:`GDNInputError` and leaves
all tensors (including an in-place state cache) untouched.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import NoReturn

import torch

from hybrid_numerics._errors import GDNInputError

#: dtypes accepted for q, k, v (the activations); the arithmetic itself is FP32 (or FP64 for FP64 input).
ACTIVATION_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
#: dtypes accepted for a recurrent state the caller owns: FP32 everywhere it lives (FP64 for oracles).
STATE_DTYPES = (torch.float32, torch.float64)
INDEX_DTYPES = (torch.int32, torch.int64)


@dataclass(frozen=True)
class GDNShapes:
    """The sizes of one call: ``B`` batch, ``T`` tokens, ``H`` q/k heads, ``HV`` value heads,
    ``K``/``V`` head dims, ``N`` sequences (``B``, or ``len(cu_seqlens) - 1`` when packed)."""

    B: int
    T: int
    H: int
    HV: int
    K: int
    V: int
    N: int
    #: Host copy of ``cu_seqlens`` when it was checked on the host (``None``: dense, or not read).
    offsets: tuple[int, ...] | None = None

    @property
    def group(self) -> int:
        """Value heads per q/k head (``HV // H``): value head ``j`` reads q/k head ``j // group``."""
        return self.HV // self.H


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise GDNInputError(message)


def _fail(message: str) -> NoReturn:
    raise GDNInputError(message)


def _check_tensor(name: str, x: object, rank: int, dtypes: tuple[torch.dtype, ...]) -> torch.Tensor:
    if isinstance(x, torch.Tensor) and x.dim() == rank and x.dtype in dtypes and x.is_contiguous():
        return x  # the common case, without formatting four messages (a decode step is ~100 us)
    _require(isinstance(x, torch.Tensor), f"{name} must be a torch.Tensor, got {type(x).__name__}")
    assert isinstance(x, torch.Tensor)
    _require(x.dim() == rank, f"{name} must have rank {rank}, got shape {tuple(x.shape)}")
    _require(x.dtype in dtypes, f"{name} has dtype {x.dtype}; expected one of {dtypes}")
    _require(x.is_contiguous(), f"{name} must be contiguous (call .contiguous() first)")
    return x


def validate_gdn_inputs(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    *,
    scale: float | None,
    initial_state: torch.Tensor | None,
    cu_seqlens: torch.Tensor | None,
    gate_params: tuple[torch.Tensor, torch.Tensor | None] | None = None,
    host_checks: bool = True,
    cu_seqlens_host: torch.Tensor | None = None,
) -> GDNShapes:
    """Check ranks, head grouping, dtypes, devices, contiguity and ``cu_seqlens``; return the sizes.

    Layout (fla's): ``q, k: [B, T, H, K]``, ``v: [B, T, HV, V]`` with ``HV % H == 0``,
    ``g, beta: [B, T, HV]``, state ``[N, HV, K, V]``. ``host_checks=False`` skips the checks
    that read ``cu_seqlens``' values (a device-to-host copy, i.e. a sync on CUDA).
    ``cu_seqlens_host``: a CPU copy of ``cu_seqlens`` (fla's ``cu_seqlens_cpu``); its values are
    checked (free) and planned with instead of copying ``cu_seqlens`` to the host.
    """
    _check_tensor("q", q, 4, ACTIVATION_DTYPES)
    _check_tensor("k", k, 4, ACTIVATION_DTYPES)
    _check_tensor("v", v, 4, ACTIVATION_DTYPES)
    _check_tensor("g", g, 3, ACTIVATION_DTYPES)
    _check_tensor("beta", beta, 3, ACTIVATION_DTYPES)
    # Messages are formatted only on failure (``if not ...: _fail(...)``): this runs once per
    # decode step of every layer.
    if q.shape != k.shape:
        _fail(f"q {tuple(q.shape)} and k {tuple(k.shape)} must have the same shape")
    if not q.dtype == k.dtype == v.dtype:
        _fail(f"q, k, v dtypes differ: {q.dtype}, {k.dtype}, {v.dtype}")
    B, T, H, K = q.shape
    if v.shape[:2] != (B, T):
        _fail(f"v {tuple(v.shape)} must share [B, T] = {(B, T)} with q")
    HV, V = v.shape[2], v.shape[3]
    if min(B, T, H, K, HV, V) <= 0:
        _fail(f"empty dimension in q {tuple(q.shape)} / v {tuple(v.shape)}")
    if HV % H != 0:
        _fail(f"value heads HV={HV} must be a multiple of q/k heads H={H}")
    for name, x in (("g", g), ("beta", beta)):
        if x.shape != (B, T, HV):
            _fail(f"{name} must have shape {(B, T, HV)}, got {tuple(x.shape)}")
    tensors = {"q": q, "k": k, "v": v, "g": g, "beta": beta}
    if gate_params is not None:
        A_log, dt_bias = gate_params
        _check_tensor("A_log", A_log, 1, ACTIVATION_DTYPES)
        if A_log.shape != (HV,):
            _fail(f"A_log must have shape {(HV,)}, got {tuple(A_log.shape)}")
        tensors["A_log"] = A_log
        if dt_bias is not None:
            _check_tensor("dt_bias", dt_bias, 1, ACTIVATION_DTYPES)
            if dt_bias.shape != (HV,):
                _fail(f"dt_bias must have shape {(HV,)}, got {tuple(dt_bias.shape)}")
            tensors["dt_bias"] = dt_bias
    N = B
    offsets = None
    if cu_seqlens is not None:
        offsets = _validate_cu_seqlens(cu_seqlens, B, T, host_checks, cu_seqlens_host)
        N = cu_seqlens.numel() - 1
        tensors["cu_seqlens"] = cu_seqlens
    if initial_state is not None:
        _check_tensor("initial_state", initial_state, 4, STATE_DTYPES)
        want = (N, HV, K, V)
        _require(
            tuple(initial_state.shape) == want,
            f"initial_state must have shape [N, HV, K, V] = {want}, got {tuple(initial_state.shape)}",
        )
        tensors["initial_state"] = initial_state
    _check_same_device(tensors)
    if scale is not None:
        _require(
            isinstance(scale, (int, float)) and math.isfinite(scale) and scale > 0,
            f"scale must be a positive finite number, got {scale!r}",
        )
    return GDNShapes(B=B, T=T, H=H, HV=HV, K=K, V=V, N=N, offsets=offsets)


def _validate_cu_seqlens(
    cu_seqlens: torch.Tensor,
    B: int,
    T: int,
    host_checks: bool,
    host: torch.Tensor | None = None,
) -> tuple[int, ...] | None:
    _check_tensor("cu_seqlens", cu_seqlens, 1, INDEX_DTYPES)
    _require(B == 1, f"with cu_seqlens the batch must be packed into B=1, got B={B}")
    _require(cu_seqlens.numel() >= 2, "cu_seqlens needs at least two entries [0, ..., T]")
    if host is not None:
        _check_tensor("cu_seqlens_cpu", host, 1, INDEX_DTYPES)
        _require(host.device.type == "cpu", f"cu_seqlens_cpu must be on the CPU, got {host.device}")
        _require(
            host.numel() == cu_seqlens.numel(),
            f"cu_seqlens_cpu has {host.numel()} entries, cu_seqlens {cu_seqlens.numel()}",
        )
        if host_checks and cu_seqlens.device.type == "cpu":  # comparing costs no sync here
            _require(torch.equal(host, cu_seqlens), "cu_seqlens_cpu differs from cu_seqlens")
        source = host  # reading it costs no device sync: always checked
    elif not host_checks:
        return None
    else:
        source = cu_seqlens
    offsets = [int(x) for x in source.tolist()]  # host copy (the chunk path plans with it)
    _require(offsets[0] == 0, f"cu_seqlens must start at 0, got {offsets[0]}")
    _require(offsets[-1] == T, f"cu_seqlens must end at T={T}, got {offsets[-1]}")
    steps = [b - a for a, b in itertools.pairwise(offsets)]
    _require(all(s > 0 for s in steps), f"cu_seqlens must be strictly increasing, got {offsets}")
    return tuple(offsets)


def _check_same_device(tensors: dict[str, torch.Tensor]) -> None:
    first = tensors["q"].device
    if all(x.device == first for x in tensors.values()):
        return
    devices = {name: x.device for name, x in tensors.items()}
    first = devices["q"]
    odd = [f"{name} on {dev}" for name, dev in devices.items() if dev != first]
    _require(not odd, f"all tensors must be on {first}: " + ", ".join(odd))


def validate_state_cache(
    state_cache: torch.Tensor | None,
    state_indices: torch.Tensor | None,
    shapes: GDNShapes,
    initial_state: torch.Tensor | None,
    device: torch.device,
    host_checks: bool = True,
) -> bool:
    """Check an in-place FP32 state cache ``[S, HV, K, V]`` and its per-sequence slots ``[N]``.

    Slots must be distinct (two sequences writing one slot would race); a negative slot means
    "no cached state": the sequence starts from zeros and its final state is not written back.
    Returns whether every slot is live (``>= 0``), which lets the caller skip the masking.
    ``host_checks=False`` skips the checks of the slots' values (range, distinct): they need a
    device-to-host copy, i.e. a sync on CUDA; it then returns ``False`` (liveness unknown).
    """
    if state_cache is None and state_indices is None:
        return False
    _require(
        state_cache is not None and state_indices is not None,
        "state_cache and state_indices must be given together",
    )
    assert state_cache is not None
    assert state_indices is not None
    _require(
        initial_state is None, "give either initial_state or state_cache/state_indices, not both"
    )
    _check_tensor("state_cache", state_cache, 4, (torch.float32,))
    want = (shapes.HV, shapes.K, shapes.V)
    _require(
        tuple(state_cache.shape[1:]) == want,
        f"state_cache must have shape [S, HV, K, V] with [HV, K, V] = {want}, got {tuple(state_cache.shape)}",
    )
    _check_tensor("state_indices", state_indices, 1, INDEX_DTYPES)
    _require(
        state_indices.numel() == shapes.N,
        f"state_indices must hold one slot per sequence (N={shapes.N}), got {state_indices.numel()}",
    )
    _check_same_device(
        {
            "q": torch.empty(0, device=device),
            "state_cache": state_cache,
            "state_indices": state_indices,
        }
    )
    if not host_checks:
        return False
    slots = state_indices.tolist()
    live = [s for s in slots if s >= 0]
    _require(
        all(s < state_cache.shape[0] for s in live),
        f"state_indices {slots} out of range for {state_cache.shape[0]} slots",
    )
    _require(len(set(live)) == len(live), f"state_indices must be distinct, got {slots}")
    return len(live) == len(slots)
