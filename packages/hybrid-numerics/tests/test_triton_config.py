"""The pruned autotune set and its environment override."""

from __future__ import annotations

import pytest

from .conftest import require_triton

require_triton()

from hybrid_numerics._triton_config import DEFAULT_CONFIGS, MAX_CONFIGS, parse_configs  # noqa: E402


def test_default_set_is_pruned() -> None:
    assert 1 <= len(DEFAULT_CONFIGS) <= MAX_CONFIGS == 4
    assert parse_configs(",".join(":".join(map(str, c)) for c in DEFAULT_CONFIGS)) == list(
        DEFAULT_CONFIGS
    )


def test_override_parses_bv_warps_stages() -> None:
    assert parse_configs("64:4:2") == [(64, 4, 2)]
    assert parse_configs(" 32:8:3 , 16:2:1") == [(32, 8, 3), (16, 2, 1)]


@pytest.mark.parametrize(
    "spec", ["", "64:4", "48:4:2", "8:4:2", "64:3:2", "64:4:0", "a:b:c", "16:1:1," * 5]
)
def test_bad_override_is_a_one_line_error(spec: str) -> None:
    with pytest.raises(ValueError, match="HYBRID_NUMERICS_TRITON_CONFIGS"):
        parse_configs(spec.rstrip(","))
