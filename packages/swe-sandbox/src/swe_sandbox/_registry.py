"""Backends by name: the built-ins, those registered at run time, and third-party ones.

The one table every command line and application reads (``--backend``, ``sandbox.backend``):
`backend_names` for the choices, `create_backend` to construct one. A third-party package adds
a backend without touching this one: it names a factory (a `Backend` class, or any callable
taking keyword options and returning a `Backend`) in the ``swe_sandbox.backends`` entry point
group of its distribution::

    [project.entry-points."swe_sandbox.backends"]
    podman = "swe_podman:PodmanBackend"

Entry points are read on every call (nothing is cached, so a package installed later is seen)
and only the one asked for is imported. A name registered in this process (the built-ins,
`register_backend`) wins over an entry point of the same name.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from swe_sandbox._backend import Backend
from swe_sandbox._docker_backend import DockerBackend
from swe_sandbox._errors import BackendPluginError, UnknownBackendError
from swe_sandbox._namespace import NamespaceBackend

#: A backend factory: called with the keyword options given to `create_backend`.
BackendFactory = Callable[..., Backend]

#: The entry point group third-party backends are announced in.
BACKEND_ENTRY_POINT_GROUP = "swe_sandbox.backends"
#: The backend command lines use when none is named: daemon-less, needs root.
DEFAULT_BACKEND = "namespace"

_lock = threading.Lock()
#: Registered in this process, in registration order (the built-ins first).
_factories: dict[str, BackendFactory] = {
    "namespace": NamespaceBackend,
    "docker": DockerBackend,
}


def register_backend(name: str, factory: BackendFactory, *, replace: bool = False) -> None:
    """Make `factory` the backend called `name` in this process.

    Raises:
        ValueError: `name` is empty or not a plain identifier-like word, or already registered
            (pass ``replace=True`` to override it, e.g. in tests).
        TypeError: `factory` is not callable.
    """
    if not name or not name.replace("-", "_").isidentifier():
        raise ValueError(f"backend name must be a word such as 'podman', got {name!r}")
    if not callable(factory):
        raise TypeError(f"backend factory for {name!r} must be callable, got {factory!r}")
    with _lock:
        if name in _factories and not replace:
            raise ValueError(f"sandbox backend {name!r} is already registered")
        _factories[name] = factory


def backend_names() -> tuple[str, ...]:
    """Every backend name: the registered ones in registration order (built-ins first), then
    the entry points' names in sorted order. Nothing is imported."""
    with _lock:
        registered = tuple(_factories)
    discovered = sorted({ep.name for ep in _entry_points()} - set(registered))
    return (*registered, *discovered)


def create_backend(name: str, **options: Any) -> Backend:
    """A new backend called `name`, constructed with `options` (e.g. ``base=BaseImageSpec(...)``).

    Raises:
        UnknownBackendError: no backend has that name (the error lists the known ones).
        BackendPluginError: its entry point cannot be imported, or does not make a backend.
    """
    return _factory(name)(**options)


def _factory(name: str) -> BackendFactory:
    with _lock:
        factory = _factories.get(name)
    if factory is not None:
        return factory
    found = [ep for ep in _entry_points() if ep.name == name]
    if not found:
        raise UnknownBackendError(name, backend_names())
    return _load(found[0])


def _entry_points() -> tuple[EntryPoint, ...]:
    return tuple(entry_points(group=BACKEND_ENTRY_POINT_GROUP))


def _load(entry: EntryPoint) -> BackendFactory:
    where = f"entry point {entry.name} = {entry.value} in group {BACKEND_ENTRY_POINT_GROUP}"
    if entry.dist is not None:
        where += f" (distribution {entry.dist.name} {entry.dist.version})"
    try:
        factory = entry.load()
    except Exception as exc:  # a plugin's import may fail in any way; name it, keep the cause
        raise BackendPluginError(
            f"sandbox backend {entry.name!r}: {where} cannot be loaded: {type(exc).__name__}: {exc}"
        ) from exc
    if not callable(factory):
        raise BackendPluginError(
            f"sandbox backend {entry.name!r}: {where} names {factory!r}, not a backend factory"
        )
    return _checked(entry.name, where, factory)


def _checked(name: str, where: str, factory: Callable[..., Any]) -> BackendFactory:
    """`factory`, whose result is checked to be a backend (it has ``start`` and
    ``reap_orphans``) before anything uses it."""

    def make(**options: Any) -> Backend:
        backend = factory(**options)
        missing = [m for m in ("start", "reap_orphans") if not callable(getattr(backend, m, None))]
        if missing:
            raise BackendPluginError(
                f"sandbox backend {name!r}: {where} made {type(backend).__name__}, which has "
                f"no {' / '.join(missing)}: not a Backend"
            )
        return backend  # type: ignore[no-any-return]

    return make
