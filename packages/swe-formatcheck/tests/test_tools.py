"""Tool specs, the call record and the shipped toolset."""

from __future__ import annotations

import pytest

from swe_formatcheck import TOOLSETS, ToolCall, ToolSpec, ToolSpecError
from swe_formatcheck._tools import resolve_tools


def test_mini_swe_agent_plus_toolset() -> None:
    specs = {spec.name: spec for spec in TOOLSETS["mini_swe_agent_plus"]}
    assert specs["execute_bash"].required == ("command",)
    assert specs["edit_via_str_replace"].required == ("path", "old_str", "new_str")
    assert specs["submit"].parameters == frozenset()
    with pytest.raises(TypeError):
        TOOLSETS["mine"] = ()  # type: ignore[index]


def test_spec_accepts_lists_and_reports_parameters() -> None:
    spec = ToolSpec("grep", ["pattern"], ["path", "flags"])
    assert spec.required == ("pattern",)
    assert spec.parameters == {"pattern", "path", "flags"}


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("bad name",), ToolSpecError),
        (("",), ToolSpecError),
        (("x" * 65,), ToolSpecError),
        (("f", ("a", "a")), ToolSpecError),
        (("f", ("a",), ("a",)), ToolSpecError),
        (("f", ("a b",)), ToolSpecError),
        (("f", "command"), TypeError),
        (("f", (1,)), TypeError),
        ((3,), TypeError),
    ],
)
def test_bad_specs(args: tuple[object, ...], error: type[Exception]) -> None:
    with pytest.raises(error):
        ToolSpec(*args)  # type: ignore[arg-type]


def test_tool_call_copies_and_validates_arguments() -> None:
    source = {"command": "ls"}
    call = ToolCall("execute_bash", source)
    source["command"] = "rm -rf /"
    assert call.arguments == {"command": "ls"}
    assert call == ToolCall("execute_bash", {"command": "ls"})
    with pytest.raises(TypeError):
        ToolCall("f", {"a": 1})  # type: ignore[dict-item]
    with pytest.raises(TypeError):
        ToolCall(None, {})  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        hash(call)


def test_resolve_tools_forms() -> None:
    toolset = TOOLSETS["mini_swe_agent_plus"]
    assert set(resolve_tools(toolset)) == {"execute_bash", "edit_via_str_replace", "submit"}
    assert set(resolve_tools(list(toolset))) == set(resolve_tools(toolset))
    assert set(resolve_tools({spec.name: spec for spec in toolset})) == set(resolve_tools(toolset))
    with pytest.raises(ToolSpecError, match="twice"):
        resolve_tools((ToolSpec("a"), ToolSpec("a")))
    with pytest.raises(ToolSpecError, match="holds the spec"):
        resolve_tools({"b": ToolSpec("a")})
    with pytest.raises(TypeError):
        resolve_tools([{"name": "a"}])
