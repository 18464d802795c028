"""Tests for ``arctic_swe.harness._config``."""

import pytest

from arctic_swe.harness import TINY_HARNESS, HarnessConfig, HarnessError


def test_defaults_are_the_papers_budgets() -> None:
    config = HarnessConfig()
    assert (config.max_turns, config.max_tokens) == (100, 131_072)
    assert TINY_HARNESS.max_turns < config.max_turns
    assert TINY_HARNESS.max_tokens < config.max_tokens


@pytest.mark.parametrize(
    "fields",
    [{"max_turns": 0}, {"max_tokens": -1}, {"max_new_tokens": True}, {"invalid_reward": 0.5},
     {"exec_timeout_s": 0}, {"observation_chars": 1.5}],
)  # fmt: skip
def test_bad_budgets_are_refused(fields: dict[str, object]) -> None:
    with pytest.raises(HarnessError):
        HarnessConfig(**fields)  # type: ignore[arg-type]
