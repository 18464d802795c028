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
from swe_curate._errors import CuratePatchApplyError, PatchFormatError

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


#: One edited region: the unchanged lines before it, then its old and its new lines.
Region = tuple[list[str], list[str], list[str]]


@st.composite
def _edited_regions(draw: st.DrawFn) -> tuple[list[Region], list[str]]:
    """2-4 edited regions and the trailing unchanged lines.

    Regions are separated by 7-9 unchanged lines that occur nowhere else: more than the context
    of two hunks (2 x 3), so the diff has exactly one hunk per region.
    """
    count = draw(st.integers(2, 4))
    regions: list[Region] = []
    for i in range(count):
        gap = draw(st.integers(0, 4) if i == 0 else st.integers(7, 9))
        before = draw(st.lists(_line, max_size=3))
        after = draw(st.lists(_line, max_size=3))
        if after == before:  # an edit must change something (no filter: nothing is rejected)
            after = [*after, f"new{i}\n"]
        regions.append(([f"ctx{i}.{j}\n" for j in range(gap)], before, after))
    return regions, [f"tail{j}\n" for j in range(draw(st.integers(0, 4)))]


def _join(regions: list[Region], tail: list[str], old_at: set[int]) -> str:
    """The text with region ``i`` in its old form when ``i in old_at``, else in its new form."""
    lines = [
        line
        for i, (context, before, after) in enumerate(regions)
        for line in [*context, *(before if i in old_at else after)]
    ]
    return "".join([*lines, *tail])


@given(edit=_edited_regions(), data=st.data())
def test_dropping_a_hunk_still_applies_and_reverts_only_that_region(
    edit: tuple[list[Region], list[str]], data: st.DataObject
) -> None:
    regions, tail = edit
    old = _join(regions, tail, old_at=set(range(len(regions))))
    new = _join(regions, tail, old_at=set())
    patch = make_patch({"m.py": old}, {"m.py": new})
    assert count_hunks(patch) == len(regions)
    index = data.draw(st.integers(0, len(regions) - 1), label="dropped hunk")
    dropped = drop_hunk(patch, index)
    assert count_hunks(dropped) == len(regions) - 1
    result = apply_patch({"m.py": old}, dropped)["m.py"]
    # Every other region is edited; the dropped one alone keeps its old lines.
    assert result == _join(regions, tail, old_at={index})
    assert result != new


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
    with pytest.raises(CuratePatchApplyError, match="does not match"):
        apply_patch({"m.py": "a\nX\nc\n"}, patch)
    with pytest.raises(CuratePatchApplyError, match="not found"):
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
