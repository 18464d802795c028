"""Unified diff round trips: make → parse → render → apply, on arbitrary texts (hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swe_curate._diff import (
    apply_patch,
    count_hunks,
    drop_hunk,
    make_patch,
    parse_patch,
    render_patch,
    touched_paths,
)
from swe_curate._errors import PatchApplyError, PatchFormatError

_line = st.sampled_from(["a\n", "b\n", "c\n", "def f():\n", "    return 1\n", "\n", "x = 2\n"])
_text = st.lists(_line, max_size=30).map("".join)
_text_maybe_no_eol = st.tuples(_text, st.sampled_from(["", "tail", "z"])).map("".join)


@given(old=_text_maybe_no_eol, new=_text_maybe_no_eol)
def test_apply_of_make_patch_reproduces_the_new_text(old: str, new: str) -> None:
    patch = make_patch({"m.py": old}, {"m.py": new})
    if old == new:
        assert patch == ""
        return
    assert apply_patch({"m.py": old}, patch) == {"m.py": new}


@given(old=_text_maybe_no_eol, new=_text_maybe_no_eol)
def test_render_is_the_inverse_of_parse(old: str, new: str) -> None:
    patch = make_patch({"m.py": old}, {"m.py": new})
    if not patch:
        return
    assert parse_patch(render_patch(parse_patch(patch))) == parse_patch(patch)
    assert apply_patch({"m.py": old}, render_patch(parse_patch(patch))) == {"m.py": new}


@given(old=_text, new=_text, data=st.data())
def test_dropping_a_hunk_still_applies_and_reverts_only_that_region(
    old: str, new: str, data: st.DataObject
) -> None:
    patch = make_patch({"m.py": old}, {"m.py": new})
    if not patch or count_hunks(patch) < 2:
        return
    index = data.draw(st.integers(0, count_hunks(patch) - 1))
    dropped = drop_hunk(patch, index)
    result = apply_patch({"m.py": old}, dropped)["m.py"]
    assert count_hunks(dropped) == count_hunks(patch) - 1
    assert result != new  # the dropped hunk changed something


def test_new_and_deleted_files() -> None:
    patch = make_patch({"gone.py": "x\n"}, {"new.py": "y = 1\n"})
    assert sorted(touched_paths(patch)) == ["gone.py"]
    assert apply_patch({"gone.py": "x\n"}, patch) == {"new.py": "y = 1\n"}


def test_offset_hunk_is_found_by_content() -> None:
    old = "".join(f"line{i}\n" for i in range(20))
    new = old.replace("line10\n", "LINE10\n")
    patch = make_patch({"m.py": old}, {"m.py": new})
    shifted_tree = "header\nheader\n" + old
    assert apply_patch({"m.py": shifted_tree}, patch)["m.py"] == "header\nheader\n" + new


def test_context_mismatch_is_a_typed_error() -> None:
    patch = make_patch({"m.py": "a\nb\nc\n"}, {"m.py": "a\nB\nc\n"})
    with pytest.raises(PatchApplyError, match="does not match"):
        apply_patch({"m.py": "a\nX\nc\n"}, patch)
    with pytest.raises(PatchApplyError, match="not found"):
        apply_patch({}, patch)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "hello world\n",
        "--- a/x\n",
        "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n",
        "--- a/x\n+++ b/x\n@@ bad\n",
    ],
)
def test_garbage_is_a_format_error(text: str) -> None:
    with pytest.raises(PatchFormatError):
        parse_patch(text)
