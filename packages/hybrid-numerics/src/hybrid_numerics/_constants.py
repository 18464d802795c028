"""Cached constant tensors that stay usable under autograd.

A tensor created inside ``torch.inference_mode()`` is an *inference tensor*: autograd refuses
to save it for backward. The kernels cache small constants (masks, row scales, 0/1 matrices)
per shape, and the first call may well come from an inference engine (the app's engine steps
under inference mode; vLLM does too) while a trainer in the same process differentiates
through the same function later. :func:`constant_cache` therefore builds every cached value
with inference mode switched off: a normal tensor, readable in both modes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import torch

_P = ParamSpec("_P")
_T = TypeVar("_T")


def constant_cache(maxsize: int) -> Callable[[Callable[_P, _T]], Callable[_P, _T]]:
    """``functools.lru_cache(maxsize)`` for a builder of read-only tensors (hashable
    arguments), whose results are never inference tensors."""

    def decorate(build: Callable[_P, _T]) -> Callable[_P, _T]:
        @functools.wraps(build)
        def normal(*args: _P.args, **kwargs: _P.kwargs) -> _T:
            with torch.inference_mode(False):
                return build(*args, **kwargs)

        cached: Callable[_P, _T] = functools.lru_cache(maxsize=maxsize)(normal)  # type: ignore[assignment]
        return cached

    return decorate
