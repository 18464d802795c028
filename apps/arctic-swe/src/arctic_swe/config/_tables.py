"""TOML tables onto frozen attrs records: the one loading mechanism of the app's config files.

The run configuration (:mod:`arctic_swe.config._load`) and the cluster topology
(:mod:`arctic_swe.cluster`) both read their files, check their sections and keys and coerce
values here, so both refuse the same mistakes with the same kind of message: an unknown
section or key (with the keys it could have been), a wrong type (an ``int`` field never
silently accepts ``1.5``, ``"1"`` or ``true``), a broken file. Every error is a
:class:`RunConfigError` naming the ``section.key``; :func:`config_errors` gives them the file
they came from and, for a loader with its own error class, that class.
"""

from __future__ import annotations

import functools
import tomllib
import typing
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import attrs

from arctic_swe.config._errors import RunConfigError

R = TypeVar("R")

#: How a list's items are named in "must be a list of …".
_ITEM_NAMES = {str: "strings", int: "integers", float: "numbers", bool: "booleans"}


def read_toml(path: str | Path) -> dict[str, Any]:
    """The tables of a TOML file; a file that cannot be read or parsed is a
    :class:`RunConfigError` on key ``config`` whose message names the file."""
    source = Path(path)
    try:
        return tomllib.loads(source.read_text())
    except OSError as exc:
        raise RunConfigError("config", f"cannot read {source}: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise RunConfigError("config", f"{source} is not valid TOML: {exc}") from exc


@contextmanager
def config_errors(
    error: type[RunConfigError] = RunConfigError, *, source: str | Path = ""
) -> Iterator[None]:
    """Re-raise the :class:`RunConfigError` of the block as ``error``, with ``source`` (the
    file) in front of its message unless it already names one."""
    try:
        yield
    except RunConfigError as exc:
        named = exc.source or (str(source) if source and exc.key != "config" else "")
        if type(exc) is error and named == exc.source:
            raise
        raise error(exc.key, exc.detail, source=named) from exc


def require(ok: bool, key: str, message: str) -> None:
    """A :class:`RunConfigError` on ``key`` unless ``ok``."""
    if not ok:
        raise RunConfigError(key, message)


def check_sections(data: Any, known: Iterable[str]) -> None:
    """``data`` is a table of tables whose names are all in ``known`` (listed, in the given
    order, in the error)."""
    if not isinstance(data, Mapping):
        raise RunConfigError("config", f"must be a table, got {type(data).__name__}")
    names = list(known)
    for section, values in data.items():
        require(section in names, str(section), f"unknown section; expected one of {names}")
        require(
            isinstance(values, Mapping), section, f"must be a table, got {type(values).__name__}"
        )


@functools.cache
def field_types(record: type) -> dict[str, Any]:
    """The fields of an attrs record class and their types (resolved annotations)."""
    hints = typing.get_type_hints(record)
    return {field.name: hints[field.name] for field in attrs.fields(record)}


def split_known(record: type, values: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``values`` split into the keys that are fields of ``record`` and the rest."""
    fields = field_types(record)
    own = {k: v for k, v in values.items() if k in fields}
    return own, {k: v for k, v in values.items() if k not in fields}


def update_record(section: str, record: R, values: Mapping[str, Any]) -> R:
    """``record`` with the ``values`` of table ``section`` applied, each coerced to its field's
    type; a key that is no field is an error listing the fields."""
    kind: type = type(record)
    fields = field_types(kind)
    updates = {}
    for key, value in values.items():
        if key not in fields:
            raise RunConfigError(
                f"{section}.{key}", f"unknown key; expected one of {sorted(fields)}"
            )
        updates[key] = coerce(f"{section}.{key}", fields[key], value)
    return attrs.evolve(record, **updates)  # type: ignore[misc]  # R is an attrs class


def coerce(key: str, kind: Any, value: Any) -> Any:
    """``value`` as a ``kind`` (``int``, ``float``, ``bool``, ``str`` or ``tuple[T, ...]`` from
    a list): an int is a float, nothing else converts — ``true`` is no int, ``1`` no bool."""
    if typing.get_origin(kind) is tuple:
        item = typing.get_args(kind)[0]
        if not isinstance(value, (list, tuple)) or not all(_is(item, v) for v in value):
            name = _ITEM_NAMES.get(item, item.__name__)
            raise RunConfigError(key, f"must be a list of {name}, got {value!r}")
        return tuple(value)
    if kind is float and _is(int, value):
        return float(value)
    if not _is(kind, value):
        raise RunConfigError(key, f"must be {kind.__name__}, got {value!r}")
    return value


def _is(kind: type, value: Any) -> bool:
    return isinstance(value, kind) and isinstance(value, bool) == (kind is bool)
