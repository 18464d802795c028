"""Dialects by name (`swe_formatcheck._registry`): the built-ins, run-time registration, and
third-party dialects found through a real ``swe_formatcheck.dialects`` entry point."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

import swe_formatcheck._registry as registry
from swe_formatcheck import (
    TOOLSETS,
    Dialect,
    DialectPluginError,
    FormatcheckError,
    ToolCall,
    ToolSpec,
    TurnVerdict,
    UnknownDialectError,
    check_turn,
    dialect_names,
    get_dialect,
    parse_lenient,
    register_dialect,
    render_turn,
)
from swe_formatcheck.strategies import ALL_MARKUP, any_text, text_without, tool_names

TOOLS = TOOLSETS["mini_swe_agent_plus"]
LS = ToolCall("execute_bash", {"command": "ls"})


def _shout_render(reasoning: str | None, call: ToolCall, *, think_prefilled: bool) -> str:
    return f"CALL {call.name} {call.arguments.get('command', '')}"


def _shout_check(
    raw: str,
    *,
    tools: Mapping[str, ToolSpec],
    reasoning: str,
    stopped: bool,
    think_prefilled: bool,
) -> TurnVerdict:
    _, name, command = raw.split(" ", 2)
    return TurnVerdict((), ToolCall(name, {"command": command}), None)


def _shout_lenient(raw: str, tools: Mapping[str, ToolSpec]) -> ToolCall | None:
    return ToolCall("execute_bash", {"command": raw.lower()})


SHOUT = Dialect("shout", _shout_render, _shout_check, _shout_lenient, "a toy dialect")


@pytest.fixture
def clean_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_dialects", dict(registry._dialects))


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An installed distribution (a dist-info with ``entry_points.txt``) on sys.path."""
    info = tmp_path / "swe_shout-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: swe-shout\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        textwrap.dedent(
            """\
            [swe_formatcheck.dialects]
            shout = swe_shout:SHOUT
            broken = swe_shout_gone:DIALECT
            notadialect = swe_shout:NOT_A_DIALECT
            misnamed = swe_shout:SHOUT
            """
        )
    )
    (tmp_path / "swe_shout.py").write_text(
        textwrap.dedent(
            """\
            from swe_formatcheck import Dialect

            def render(reasoning, call, *, think_prefilled):
                return "PLUGGED " + call.name

            SHOUT = Dialect("shout", render, None, None, "from an entry point")
            NOT_A_DIALECT = "shout"
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_the_built_ins_are_registered_once_in_order() -> None:
    assert dialect_names()[:2] == ("qwen3_coder", "hermes")
    for name in ("qwen3_coder", "hermes"):
        dialect = get_dialect(name)
        assert dialect.name == name
        assert dialect.description
        assert attrs.has(type(dialect))
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            dialect.name = "other"  # type: ignore[misc]


def test_an_unknown_dialect_is_a_typed_value_error_naming_the_known_ones() -> None:
    with pytest.raises(UnknownDialectError) as caught:
        get_dialect("glm")
    assert str(caught.value) == "dialect must be one of ['qwen3_coder', 'hermes'], got 'glm'"
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value, FormatcheckError)
    for call in (
        lambda: check_turn("x", tools=TOOLS, dialect="glm"),
        lambda: render_turn(None, LS, dialect="glm"),
        lambda: parse_lenient("x", tools=TOOLS, dialect="glm"),
    ):
        with pytest.raises(UnknownDialectError):
            call()


@pytest.mark.usefixtures("clean_registry")
def test_a_registered_dialect_serves_the_public_functions() -> None:
    register_dialect(SHOUT)
    assert dialect_names()[-1] == "shout"
    assert render_turn(None, LS, dialect="shout") == "CALL execute_bash ls"
    assert check_turn("CALL execute_bash pwd", tools=TOOLS, dialect="shout").call == ToolCall(
        "execute_bash", {"command": "pwd"}
    )
    assert parse_lenient("LS", tools=TOOLS, dialect="shout") == LS
    with pytest.raises(ValueError, match="already registered"):
        register_dialect(SHOUT)
    register_dialect(attrs.evolve(SHOUT, description="again"), replace=True)
    assert get_dialect("shout").description == "again"


def test_registration_takes_only_a_named_dialect() -> None:
    with pytest.raises(TypeError, match="takes a Dialect"):
        register_dialect("shout")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dialect name"):
        register_dialect(attrs.evolve(SHOUT, name="two words"))


@pytest.mark.usefixtures("plugin")
def test_an_entry_point_dialect_is_listed_and_used() -> None:
    names = dialect_names()
    assert names[:2] == ("qwen3_coder", "hermes")
    assert {"shout", "broken"} <= set(names)
    assert get_dialect("shout").description == "from an entry point"
    assert render_turn(None, LS, dialect="shout") == "PLUGGED execute_bash"


@pytest.mark.usefixtures("plugin")
@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("broken", "cannot be loaded: ModuleNotFoundError"),
        ("notadialect", "names a str, not a Dialect"),
        ("misnamed", "names the Dialect 'shout'"),
    ],
)
def test_a_broken_entry_point_is_a_typed_error_naming_it(name: str, why: str) -> None:
    with pytest.raises(DialectPluginError, match=why) as caught:
        get_dialect(name)
    assert "group swe_formatcheck.dialects" in str(caught.value)
    assert "swe-shout 1.0" in str(caught.value)
    assert get_dialect("hermes").name == "hermes"  # nothing else is spoiled


calls = st.builds(
    ToolCall,
    tool_names(),
    st.dictionaries(tool_names(), text_without(ALL_MARKUP), max_size=3),
)


@given(call=calls, reasoning=st.none() | text_without(ALL_MARKUP), hermes=st.booleans())
def test_render_then_lenient_parse_is_identity_in_each_dialect(
    call: ToolCall, reasoning: str | None, hermes: bool
) -> None:
    """A canonical turn is read the same by the forgiving parser as by the strict one."""
    dialect = "hermes" if hermes else "qwen3_coder"
    spec = ToolSpec(call.name, optional=tuple(call.arguments))
    raw = render_turn(reasoning, call, dialect=dialect)
    assert parse_lenient(raw, tools=(spec,), dialect=dialect) == call


@given(value=any_text())
def test_hermes_lenient_parse_reads_any_string_back(value: str) -> None:
    call = ToolCall("execute_bash", {"command": value})
    raw = render_turn(None, call, dialect="hermes")
    assert parse_lenient(raw, tools=TOOLS, dialect="hermes") == call
