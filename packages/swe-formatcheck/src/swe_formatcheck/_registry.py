"""Tool-call dialects by name: the built-ins, those registered at run time, third-party ones.

`check_turn`, `render_turn`, `parse_lenient` and every application choosing a dialect read this
one table. A third-party package adds a dialect without touching this one: it names a
`Dialect` record in the ``swe_formatcheck.dialects`` entry point group of its distribution::

    [project.entry-points."swe_formatcheck.dialects"]
    glm = "swe_glm_calls:GLM"

Entry points are read when a name is not registered in the process (nothing is cached, so a
package installed later is seen) and only the one asked for is imported; a registered name
(the built-ins included) wins over an entry point of the same name.
"""

from __future__ import annotations

import threading
from importlib.metadata import EntryPoint, entry_points

from swe_formatcheck._dialect import Dialect
from swe_formatcheck._errors import DialectPluginError, UnknownDialectError
from swe_formatcheck._hermes import HERMES
from swe_formatcheck._qwen_xml import QWEN3_CODER

#: The entry point group third-party dialects are announced in.
DIALECT_ENTRY_POINT_GROUP = "swe_formatcheck.dialects"

_lock = threading.Lock()
#: Registered in this process, in registration order (the built-ins first).
_dialects: dict[str, Dialect] = {d.name: d for d in (QWEN3_CODER, HERMES)}


def register_dialect(dialect: Dialect, *, replace: bool = False) -> None:
    """Make `dialect` available under ``dialect.name`` in this process.

    Raises:
        TypeError: `dialect` is not a `Dialect`.
        ValueError: its name is empty, or already registered (``replace=True`` overrides it).
    """
    if not isinstance(dialect, Dialect):
        raise TypeError(f"register_dialect takes a Dialect, got {type(dialect).__name__}")
    if not dialect.name or not dialect.name.isidentifier():
        raise ValueError(f"dialect name must be a word such as 'hermes', got {dialect.name!r}")
    with _lock:
        if dialect.name in _dialects and not replace:
            raise ValueError(f"dialect {dialect.name!r} is already registered")
        _dialects[dialect.name] = dialect


def dialect_names() -> tuple[str, ...]:
    """Every dialect name: the registered ones in registration order (``qwen3_coder``,
    ``hermes`` first), then the entry points' names sorted. Nothing is imported."""
    with _lock:
        registered = tuple(_dialects)
    discovered = sorted({ep.name for ep in _entry_points()} - set(registered))
    return (*registered, *discovered)


def get_dialect(name: str) -> Dialect:
    """The dialect called `name`.

    Raises:
        UnknownDialectError: no dialect has that name (a `ValueError`; it lists the known ones).
        DialectPluginError: its entry point cannot be imported or does not name a `Dialect`.
    """
    with _lock:
        found = _dialects.get(name)
    if found is not None:
        return found
    entries = [ep for ep in _entry_points() if ep.name == name]
    if not entries:
        raise UnknownDialectError(name, dialect_names())
    return _load(entries[0])


def _entry_points() -> tuple[EntryPoint, ...]:
    return tuple(entry_points(group=DIALECT_ENTRY_POINT_GROUP))


def _load(entry: EntryPoint) -> Dialect:
    where = f"entry point {entry.name} = {entry.value} in group {DIALECT_ENTRY_POINT_GROUP}"
    if entry.dist is not None:
        where += f" (distribution {entry.dist.name} {entry.dist.version})"
    try:
        loaded = entry.load()
    except Exception as exc:  # a plugin's import may fail in any way; name it, keep the cause
        raise DialectPluginError(
            f"dialect {entry.name!r}: {where} cannot be loaded: {type(exc).__name__}: {exc}"
        ) from exc
    if not isinstance(loaded, Dialect):
        raise DialectPluginError(
            f"dialect {entry.name!r}: {where} names a {type(loaded).__name__}, not a Dialect"
        )
    if loaded.name != entry.name:
        raise DialectPluginError(
            f"dialect {entry.name!r}: {where} names the Dialect {loaded.name!r}"
        )
    return loaded
