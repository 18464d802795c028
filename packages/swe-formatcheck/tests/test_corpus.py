"""The shipped corpus: every malformed case raises exactly its codes, every valid case parses."""

from __future__ import annotations

import pytest

from swe_formatcheck import (
    MALFORMED_CORPUS,
    TOOLSETS,
    VALID_CORPUS,
    MalformedCase,
    ValidCase,
    check_turn,
    render_turn,
)

TOOLS = TOOLSETS["mini_swe_agent_plus"]


def test_corpus_size_and_unique_names() -> None:
    assert len(MALFORMED_CORPUS) >= 13
    assert len(VALID_CORPUS) >= 5
    names = [case.name for case in (*MALFORMED_CORPUS, *VALID_CORPUS)]
    assert len(set(names)) == len(names)
    assert {case.dialect for case in MALFORMED_CORPUS} == {"qwen3_coder", "hermes"}


@pytest.mark.parametrize("case", MALFORMED_CORPUS, ids=lambda case: case.name)
def test_malformed_case_raises_its_codes(case: MalformedCase) -> None:
    verdict = check_turn(
        case.raw,
        tools=TOOLS,
        dialect=case.dialect,  # type: ignore[arg-type]
        reasoning=case.reasoning,  # type: ignore[arg-type]
        think_prefilled=case.think_prefilled,
        stopped=case.stopped,
    )
    assert verdict.codes == case.codes
    assert verdict.call is None


@pytest.mark.parametrize("case", VALID_CORPUS, ids=lambda case: case.name)
def test_valid_case_parses_exactly(case: ValidCase) -> None:
    verdict = check_turn(
        case.raw,
        tools=TOOLS,
        dialect=case.dialect,  # type: ignore[arg-type]
        reasoning=case.reasoning_mode,  # type: ignore[arg-type]
        think_prefilled=case.think_prefilled,
    )
    assert verdict.codes == ()
    assert verdict.call == case.call
    assert verdict.reasoning == case.reasoning


@pytest.mark.parametrize(
    "case", [case for case in VALID_CORPUS if case.dialect == "qwen3_coder"], ids=lambda c: c.name
)
def test_valid_qwen_cases_are_canonical_renders(case: ValidCase) -> None:
    rendered = render_turn(case.reasoning, case.call, think_prefilled=case.think_prefilled)
    assert rendered.strip() == case.raw.strip()
