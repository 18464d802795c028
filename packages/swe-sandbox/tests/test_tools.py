"""`_tools`: path confinement and the exact-match replacement, against a readable reference."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swe_sandbox import PathEscapeError, StrReplaceError
from swe_sandbox._tools import confine, line_of, match_offsets, snippet, str_replace

alphabet = st.sampled_from("ab\nc")


def reference_count(text: str, needle: str) -> int:
    return sum(1 for i in range(len(text)) if text[i : i + len(needle)] == needle)


@given(
    st.text(alphabet, max_size=40),
    st.text(alphabet, min_size=1, max_size=4),
    st.text(alphabet, max_size=5),
)
def test_replace_only_on_exactly_one_match(text: str, old: str, new: str) -> None:
    count = reference_count(text, old)
    if count == 1:
        result, line = str_replace(text, old, new, path="f")
        start = text.index(old)
        assert result == text[:start] + new + text[start + len(old) :]
        assert line == text[:start].count("\n") + 1
    else:
        with pytest.raises(StrReplaceError) as info:
            str_replace(text, old, new, path="f")
        message = str(info.value)
        assert ("not found" in message) if count == 0 else (f"occurs {count} times" in message)


def test_several_matches_report_their_lines() -> None:
    text = "x = 1\ny = 2\nx = 1\n"
    with pytest.raises(StrReplaceError, match=r"occurs 2 times \(lines 1, 3\)"):
        str_replace(text, "x = 1", "x = 9", path="m.py")


def test_empty_old_str_is_refused() -> None:
    with pytest.raises(StrReplaceError, match="empty"):
        str_replace("abc", "", "z", path="m.py")


@given(st.text("ab\n", max_size=30), st.text("ab", min_size=1, max_size=3))
def test_match_offsets_are_every_occurrence(text: str, needle: str) -> None:
    offsets = match_offsets(text, needle)
    assert offsets == [i for i in range(len(text)) if text.startswith(needle, i)]
    for offset in offsets:
        assert line_of(text, offset) == text[:offset].count("\n") + 1


@pytest.mark.parametrize(
    "path", ["../etc/passwd", "/etc/passwd", "a/../../x", "/work/../x", "/workx/y", "", "a\x00b"]
)
def test_confine_refuses_escapes(path: str) -> None:
    with pytest.raises(PathEscapeError):
        confine(path)


@pytest.mark.parametrize(
    ("path", "expected"),
    [("a.py", "/work/a.py"), ("/work/b/c", "/work/b/c"), ("b/../c", "/work/c"), (".", "/work")],
)
def test_confine_accepts_workdir_paths(path: str, expected: str) -> None:
    assert confine(path) == expected


def test_snippet_numbers_lines() -> None:
    text = "\n".join(f"l{i}" for i in range(1, 11))
    assert snippet(text, 5, context=1) == "     4\tl4\n     5\tl5\n     6\tl6"
