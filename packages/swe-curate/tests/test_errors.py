"""The error hierarchy: curation errors that are also swe-sandbox's."""

from __future__ import annotations

import pytest

import swe_sandbox
from swe_curate import CurateError, CuratePatchApplyError


def test_patch_apply_error_is_a_curate_error_and_the_sandbox_one() -> None:
    with pytest.raises(swe_sandbox.PatchApplyError, match="does not apply"):
        raise CuratePatchApplyError("a.py: hunk 1 does not apply")
    assert issubclass(CuratePatchApplyError, CurateError)
    assert not issubclass(swe_sandbox.PatchApplyError, CurateError)  # only ours is a CurateError
