"""Tests for ``arctic_swe.deck._functions`` (the bug family)."""

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arctic_swe.deck import evaluate, inject_bug, make_function
from arctic_swe.deck._functions import first_failing_case


@given(st.integers(min_value=0, max_value=2**32))
def test_every_injected_bug_is_detected_by_a_case(seed: int) -> None:
    rng = random.Random(seed)
    spec = make_function(rng, "f")
    for args, expected in spec.cases:
        assert evaluate(spec.expr, spec.params, args) == expected
    broken = inject_bug(rng, spec)
    if broken is None:  # possible only when every mutation is equivalent on the cases
        return
    assert broken.buggy_expr != spec.expr
    args, got, want = first_failing_case(broken)
    assert got != want
    assert evaluate(broken.buggy_expr, spec.params, args) == got  # type: ignore[arg-type]


@given(st.integers(min_value=0, max_value=2**32))
def test_source_is_python_that_computes_the_expression(seed: int) -> None:
    rng = random.Random(seed)
    spec = make_function(rng, "fn")
    scope: dict[str, object] = {}
    exec(spec.source(buggy=False), scope)
    function = scope["fn"]
    assert callable(function)
    for args, expected in spec.cases:
        assert function(*args) == expected


def test_first_failing_case_needs_a_bug() -> None:
    spec = make_function(random.Random(0), "f")
    with pytest.raises(ValueError, match="no bug"):
        first_failing_case(spec)
