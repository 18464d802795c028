"""TF32 off for the torch products that touch the recurrent state.

A process that enables TF32 (``torch.backends.cuda.matmul.fp32_precision = "tf32"``, the legacy
``allow_tf32 = True`` or ``torch.set_float32_matmul_precision("high")``) silently turns every
FP32 ``torch.matmul`` on CUDA into a 10-bit-mantissa product - for the state, exactly the
rounding Arctic-SWE §3.3 removes. :func:`ieee_fp32` switches CUDA matmuls to IEEE FP32 for its
block and restores the caller's setting afterwards; :func:`state_bmm` is a batched product whose
forward *and* backward run that way (autograd runs backward outside any forward-time block).
The Triton kernels need neither: their dots say ``input_precision="ieee"``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

_matmul = torch.backends.cuda.matmul


@contextlib.contextmanager
def ieee_fp32(enabled: bool = True) -> Iterator[None]:
    """CUDA FP32 matmuls in IEEE precision inside the block (no TF32); the caller's setting
    (new or legacy API) is restored on exit. Not thread-safe, like the flag itself.

    ``enabled=False`` does nothing: callers pass ``tensor.is_cuda`` - the flag only changes
    CUDA products, and reading plus writing it twice costs ~30 us, a fifth of a small CPU
    decode step."""
    if not enabled:
        yield
        return
    if hasattr(_matmul, "fp32_precision"):  # torch >= 2.9: only the new API (mixing raises)
        before = _matmul.fp32_precision
        _matmul.fp32_precision = "ieee"
        try:
            yield
        finally:
            _matmul.fp32_precision = before
        return
    legacy = _matmul.allow_tf32  # pragma: no cover - torch < 2.9
    _matmul.allow_tf32 = False  # pragma: no cover
    try:  # pragma: no cover
        yield
    finally:  # pragma: no cover
        _matmul.allow_tf32 = legacy


def state_bmm(a: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
    """``a @ state`` (batched), forward and backward with TF32 off."""
    out: torch.Tensor = _StateBmm.apply(a, state)
    return out


class _StateBmm(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: torch.autograd.function.FunctionCtx, a: torch.Tensor, state: torch.Tensor
    ) -> torch.Tensor:
        ctx.save_for_backward(a, state)
        with ieee_fp32(a.is_cuda):
            return torch.matmul(a, state)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(
        ctx: torch.autograd.function.FunctionCtx, grad: torch.Tensor
    ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        a, state = ctx.saved_tensors  # type: ignore[attr-defined]
        need_a, need_state = ctx.needs_input_grad  # type: ignore[attr-defined]
        with ieee_fp32(grad.is_cuda):
            d_a = torch.matmul(grad, state.transpose(-1, -2)) if need_a else None
            d_state = torch.matmul(a.transpose(-1, -2), grad) if need_state else None
        if d_a is not None:
            d_a = _sum_to(d_a, a.shape)
        if d_state is not None:
            d_state = _sum_to(d_state, state.shape)
        return d_a, d_state


def _sum_to(x: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Undo matmul's batch broadcasting."""
    if x.shape == shape:
        return x
    return x.sum_to_size(shape)
