"""The package's error types: one base class, and the input error every entry point raises."""

from __future__ import annotations


class HybridNumericsError(Exception):
    """Base class of every error this package raises on purpose."""


class GDNInputError(HybridNumericsError, ValueError):
    """Bad input to a Gated DeltaNet entry point (rank, heads, dtype, layout, ``cu_seqlens``).

    Raised by validation *before* any computation or kernel launch, so no caller-owned tensor
    (in particular an in-place ``state_cache``) has been touched when it is raised.
    """


class PatchError(HybridNumericsError, TypeError):
    """A model (or module) cannot be patched or given a precision policy as asked."""
