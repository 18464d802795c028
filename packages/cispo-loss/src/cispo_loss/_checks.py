"""Input validation shared by the public functions: each failure names the offending tensor."""

from __future__ import annotations

import torch

from cispo_loss._errors import InputError


def require_tensor(name: str, value: object) -> torch.Tensor:
    """Return ``value`` if it is a tensor, else raise :class:`InputError` naming it."""
    if not isinstance(value, torch.Tensor):
        raise InputError(name, f"expected a torch.Tensor, got {type(value).__name__}")
    return value


def require_float(name: str, tensor: torch.Tensor) -> None:
    if not tensor.is_floating_point():
        raise InputError(name, f"expected a floating-point dtype, got {tensor.dtype}")


def require_integer(name: str, tensor: torch.Tensor) -> None:
    if tensor.is_floating_point() or tensor.is_complex() or tensor.dtype == torch.bool:
        raise InputError(name, f"expected an integer dtype, got {tensor.dtype}")


def require_shape(name: str, tensor: torch.Tensor, shape: tuple[int, ...], like: str) -> None:
    if tuple(tensor.shape) != shape:
        raise InputError(name, f"shape {tuple(tensor.shape)} does not match {like} {shape}")


def require_same_device(name: str, tensor: torch.Tensor, device: torch.device, like: str) -> None:
    if tensor.device != device:
        raise InputError(name, f"is on {tensor.device} but {like} is on {device}")


def require_finite(name: str, tensor: torch.Tensor, where: torch.Tensor | None = None) -> None:
    """Reject NaN/inf, optionally only at positions where ``where`` is True."""
    bad = ~torch.isfinite(tensor)
    if where is not None:
        bad &= where
    count = int(bad.sum())
    if count:
        scope = " at trainable positions" if where is not None else ""
        raise InputError(name, f"holds {count} NaN/inf value(s){scope}")


def as_bool_mask(name: str, mask: torch.Tensor) -> torch.Tensor:
    """Accept a bool mask or a numeric 0/1 mask; anything else is an error."""
    if mask.dtype == torch.bool:
        return mask
    if mask.is_complex():
        raise InputError(name, f"expected bool or 0/1 values, got dtype {mask.dtype}")
    as_bool = mask != 0
    if bool(((mask != 0) & (mask != 1)).any()):
        raise InputError(name, "expected bool or 0/1 values, found other numbers")
    return as_bool


def check_cu_seqlens_shape(cu_seqlens: torch.Tensor) -> None:
    """The metadata half of :func:`check_cu_seqlens` (a tensor of integers, ``[B + 1]``): no sync."""
    require_tensor("cu_seqlens", cu_seqlens)
    require_integer("cu_seqlens", cu_seqlens)
    if cu_seqlens.dim() != 1 or cu_seqlens.numel() < 2:
        raise InputError(
            "cu_seqlens", f"expected shape [B + 1] with B >= 1, got {tuple(cu_seqlens.shape)}"
        )


def check_cu_seqlens(cu_seqlens: torch.Tensor, total: int) -> torch.Tensor:
    """Validate packed-sequence offsets ``[B + 1]`` (0, …, total, non-decreasing); return lengths."""
    check_cu_seqlens_shape(cu_seqlens)
    if int(cu_seqlens[0]) != 0:
        raise InputError("cu_seqlens", f"must start at 0, starts at {int(cu_seqlens[0])}")
    if int(cu_seqlens[-1]) != total:
        raise InputError(
            "cu_seqlens", f"must end at the packed length {total}, ends at {int(cu_seqlens[-1])}"
        )
    lengths = cu_seqlens[1:] - cu_seqlens[:-1]
    if bool((lengths < 0).any()):
        raise InputError("cu_seqlens", "must be non-decreasing")
    return lengths
