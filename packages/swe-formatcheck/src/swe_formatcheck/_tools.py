"""Tool specifications, the parsed call record and the shipped toolsets.

A `ToolSpec` names a function and its string parameters (required and optional). Both dialects
validate a call against the specs passed to `check_turn(tools=...)`; nothing else about the schema
(types, enums) is checked, because every parameter of a SWE harness tool is a string.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from types import MappingProxyType

import attrs

from swe_formatcheck._errors import ToolSpecError

#: Longest function or parameter name accepted (OpenAI's limit for function names).
NAME_MAX = 64
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def is_tool_name(name: str) -> bool:
    """Whether `name` fits ``^[A-Za-z0-9_-]{1,64}$`` (the OpenAI function-name rule)."""
    return 0 < len(name) <= NAME_MAX and all(char in _NAME_CHARS for char in name)


def _names_tuple(value: object) -> tuple[str, ...]:
    # A bare str is iterable; turning "command" into ("c", "o", ...) would be a silent disaster.
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise TypeError(f"parameter names must be an iterable of str, got {type(value).__name__}")
    names = tuple(value)
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"parameter names must be str, got {type(name).__name__}")
    return names


def _check_name(kind: str, name: str) -> None:
    if not is_tool_name(name):
        raise ToolSpecError(f"{kind} name {name!r} must match ^[A-Za-z0-9_-]{{1,{NAME_MAX}}}$")


@attrs.frozen
class ToolSpec:
    """One tool the model may call: its name and its string parameters.

    Attributes:
        name: the function name, ``^[A-Za-z0-9_-]{1,64}$``.
        required: parameters every call must give.
        optional: parameters a call may give.
    """

    name: str
    required: tuple[str, ...] = attrs.field(default=(), converter=_names_tuple)
    optional: tuple[str, ...] = attrs.field(default=(), converter=_names_tuple)

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise TypeError(f"ToolSpec.name must be str, got {type(self.name).__name__}")
        _check_name("tool", self.name)
        seen: set[str] = set()
        for param in (*self.required, *self.optional):
            _check_name("parameter", param)
            if param in seen:
                raise ToolSpecError(f"tool {self.name!r} declares parameter {param!r} twice")
            seen.add(param)

    @property
    def parameters(self) -> frozenset[str]:
        """Every declared parameter, required or optional."""
        return frozenset((*self.required, *self.optional))


def _arguments_dict(value: object) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise TypeError(f"ToolCall.arguments must be a mapping, got {type(value).__name__}")
    copied: dict[str, str] = {}
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, str):
            raise TypeError("ToolCall.arguments must map str to str")
        copied[key] = item
    return copied


@attrs.frozen
class ToolCall:
    """The single call of a valid turn, with exact string values.

    Attributes:
        name: the function name.
        arguments: parameter name -> exact value (the one canonical newline on each side of a
            qwen3_coder value is already removed; nothing else is touched).
    """

    name: str = attrs.field()
    arguments: dict[str, str] = attrs.field(factory=dict, converter=_arguments_dict)

    @name.validator
    def _name_is_str(self, _attribute: object, value: object) -> None:
        if not isinstance(value, str):
            raise TypeError(f"ToolCall.name must be str, got {type(value).__name__}")

    __hash__ = None  # type: ignore[assignment]  # holds a dict: equal by value, not hashable


EXECUTE_BASH = ToolSpec("execute_bash", required=("command",))
EDIT_VIA_STR_REPLACE = ToolSpec("edit_via_str_replace", required=("path", "old_str", "new_str"))
SUBMIT = ToolSpec("submit")

#: Named toolsets: ``TOOLSETS["mini_swe_agent_plus"]`` is the Mini-SWE-Agent-Plus harness.
TOOLSETS: Mapping[str, tuple[ToolSpec, ...]] = MappingProxyType(
    {"mini_swe_agent_plus": (EXECUTE_BASH, EDIT_VIA_STR_REPLACE, SUBMIT)}
)


def resolve_tools(tools: object) -> Mapping[str, ToolSpec]:
    """Turn the ``tools=`` argument into a name -> spec mapping, or raise a clear error.

    Accepts an iterable of `ToolSpec` (e.g. ``TOOLSETS["mini_swe_agent_plus"]``) or a mapping of
    name -> `ToolSpec`. Tuples are cached, so passing the same toolset each turn costs nothing.
    """
    if isinstance(tools, Mapping):
        specs = tuple(tools.values())
        for key, spec in tools.items():
            if isinstance(spec, ToolSpec) and key != spec.name:
                raise ToolSpecError(f"tools[{key!r}] holds the spec of {spec.name!r}")
    elif isinstance(tools, str | bytes) or not isinstance(tools, Iterable):
        raise TypeError(
            f"tools must be an iterable of ToolSpec or a mapping name -> ToolSpec, "
            f"got {type(tools).__name__}"
        )
    else:
        specs = tools if isinstance(tools, tuple) else tuple(tools)
    for spec in specs:
        if not isinstance(spec, ToolSpec):
            raise TypeError(f"tools must hold ToolSpec values, got {type(spec).__name__}")
    return _resolve_tuple(specs)


@functools.lru_cache(maxsize=64)
def _resolve_tuple(specs: tuple[ToolSpec, ...]) -> Mapping[str, ToolSpec]:
    by_name: dict[str, ToolSpec] = {}
    for spec in specs:
        if spec.name in by_name:
            raise ToolSpecError(f"tool {spec.name!r} declared twice")
        by_name[spec.name] = spec
    return MappingProxyType(by_name)
