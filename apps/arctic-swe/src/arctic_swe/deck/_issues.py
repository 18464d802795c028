"""The issue text of an embedded task, in one of two styles (``arctic_swe._issue_styles``).

``line`` states one failing call and quotes the wrong line and the right one, so the fix is a
copy. ``behaviour`` states only what the function does: every test input with the value the
buggy function returns and the value the fixed one returns (both obtained by running the two
module sources, so the issue cannot disagree with the code), and the failing test's id. It never
quotes either line, so the edit must be inferred from behaviour — the skill, as opposed to
recalling a memorised pool fix (Arctic-SWE §3.1). Both styles describe the same task: the
repository, the tests and the gold patch do not depend on the style.
"""

from __future__ import annotations

from dataclasses import dataclass

from arctic_swe._issue_styles import BEHAVIOUR_STYLE, ISSUE_STYLES, LINE_STYLE
from arctic_swe.deck._errors import DeckConfigError
from arctic_swe.deck._functions import FunctionSpec, first_failing_case


@dataclass(frozen=True)
class IssueFacts:
    """What an issue may draw on: where the bug is, the broken function, the module's buggy
    and fixed sources, the fix's two lines and the failing test's node id."""

    path: str
    spec: FunctionSpec
    buggy_module: str
    fixed_module: str
    old_line: str
    new_line: str
    failing_test: str


def call_function(module_source: str, name: str, args: tuple[int, ...]) -> int:
    """Run ``name(*args)`` as ``module_source`` defines it (generated modules use only ``min``
    and ``max``, so nothing else is in scope); :class:`TypeError` if it does not return an int."""
    namespace: dict[str, object] = {"__builtins__": {"min": min, "max": max}}
    exec(compile(module_source, "<deck module>", "exec"), namespace)
    value = namespace[name](*args)  # type: ignore[operator]
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}{args} returned {value!r}, not an int")
    return value


def line_issue(facts: IssueFacts) -> str:
    """One failing call, then the wrong line and the right one (the default style)."""
    spec = facts.spec
    args, got, want = first_failing_case(spec)
    call = f"{spec.name}({', '.join(map(str, args))})"
    return (
        f"`{spec.name}` in `{facts.path}` returns the wrong value: "
        f"`{call}` gives {got} but should give {want}.\n"
        f"The line `{facts.old_line}` should be `{facts.new_line}`.\n"
    )


def behaviour_issue(facts: IssueFacts) -> str:
    """Every test input of the broken function with what it returns and what it should return
    (run, not copied from the test cases), and the failing test; no line of code."""
    name = facts.spec.name
    bullets: list[str] = []
    for args, _ in facts.spec.cases:
        call = f"`{name}({', '.join(map(str, args))})`"
        got = call_function(facts.buggy_module, name, args)
        want = call_function(facts.fixed_module, name, args)
        if got == want:
            bullets.append(f"- {call} returns {got}, which is correct\n")
        else:
            bullets.append(f"- {call} returns {got}, expected {want}\n")
    if not any("expected" in bullet for bullet in bullets):
        raise ValueError(f"no test input of {name} shows its bug")
    return (
        f"`{name}` in `{facts.path}` returns the wrong value for some inputs:\n\n"
        + "".join(bullets)
        + f"\nThe failing test is `{facts.failing_test}`.\n"
    )


def write_issue(style: str, facts: IssueFacts) -> str:
    """The issue of ``facts`` in ``style`` (one of ``ISSUE_STYLES``)."""
    if style == LINE_STYLE:
        return line_issue(facts)
    if style == BEHAVIOUR_STYLE:
        return behaviour_issue(facts)
    raise DeckConfigError(f"issue_style must be one of {ISSUE_STYLES}, got {style!r}")
