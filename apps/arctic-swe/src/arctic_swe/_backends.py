"""The swe-sandbox backend a run or a command names (``sandbox.backend``, ``--backend``).

Names and constructors are swe-sandbox's (`swe_sandbox.backend_names`,
`swe_sandbox.create_backend`): the built-ins and any backend a package announces in the
``swe_sandbox.backends`` entry point group. Nothing is copied here; this module only defers
the import, because ``arctic-swe --help`` must not pay for the sandbox package. Give argparse a
``metavar`` with ``choices=SANDBOX_BACKENDS``: without one it lists the choices while the parser
is built.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, overload

if TYPE_CHECKING:
    from swe_sandbox import Backend


class _BackendNames(Sequence[str]):
    """`swe_sandbox.backend_names()`, read at each use (a membership test, printed choices)."""

    @staticmethod
    def _names() -> tuple[str, ...]:
        from swe_sandbox import backend_names

        return backend_names()

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self._names()[index]

    def __len__(self) -> int:
        return len(self._names())

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __repr__(self) -> str:
        return repr(self._names())


#: The backend names there are, looked up when used (``in``, iteration, ``repr``).
SANDBOX_BACKENDS: Sequence[str] = _BackendNames()


def sandbox_backend(name: str) -> Backend:
    """A new swe-sandbox backend called ``name``; `swe_sandbox.UnknownBackendError` (a
    ``ValueError`` listing the known names) for a name nobody registered."""
    from swe_sandbox import create_backend

    return create_backend(name)
