"""`reward_contract`: 1 only for the exact expected pattern."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from swe_sandbox import ExecResult, TestOutcome, reward_contract

F2P = ("t::a", "t::b")
P2P = ("t::c",)
outcome_maps = st.dictionaries(
    st.sampled_from(["t::a", "t::b", "t::c", "t::other"]), st.sampled_from(list(TestOutcome))
)


@given(outcome_maps, st.sampled_from([0, 1, 2, 5, 137]), st.booleans(), st.booleans())
def test_reward_is_one_exactly_for_the_expected_pattern(
    outcomes: dict[str, TestOutcome], code: int, found: bool, collect_error: bool
) -> None:
    reward, reasons = reward_contract(
        outcomes, F2P, P2P, code, report_found=found, collection_error=collect_error
    )
    all_pass = all(outcomes.get(t) is TestOutcome.PASSED for t in F2P + P2P)
    others_failed = outcomes.get("t::other") in (TestOutcome.FAILED, TestOutcome.ERROR)
    code_ok = code in (0, 5) or others_failed
    expected = int(all_pass and found and not collect_error and code_ok)
    assert reward == expected
    assert (reasons == ()) == (reward == 1)


def test_missing_graded_test_is_a_failure() -> None:
    reward, reasons = reward_contract(
        {"t::a": TestOutcome.PASSED}, F2P, P2P, 0, report_found=True, collection_error=False
    )
    assert reward == 0
    assert "FAIL_TO_PASS t::b: missing" in reasons


def test_task_without_graded_tests_never_rewards() -> None:
    assert reward_contract({}, (), (), 0, report_found=True, collection_error=False)[0] == 0


def test_exec_result_ok() -> None:
    assert ExecResult(exit_code=0, output="").ok
    assert not ExecResult(exit_code=0, output="", timed_out=True).ok
