"""The marker finder agrees with a plain, obviously correct search."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from swe_formatcheck._lexer import TAG_NAME_SCAN, MarkerFinder, read_tag_name
from swe_formatcheck.strategies import ALL_MARKUP, any_text

SOUP = st.lists(st.one_of(any_text(), st.sampled_from(ALL_MARKUP)), max_size=20).map("".join)


def naive_find(text: str, pos: int, markers: tuple[str, ...]) -> tuple[int, str | None]:
    hits = [(text.find(marker, pos), marker) for marker in markers if text.find(marker, pos) >= 0]
    return min(hits) if hits else (len(text), None)


@given(
    SOUP, st.lists(st.tuples(st.integers(0, 40), st.sets(st.sampled_from(ALL_MARKUP), min_size=1)))
)
def test_finder_matches_naive_search(text: str, steps: list[tuple[int, set[str]]]) -> None:
    finder = MarkerFinder(text, ALL_MARKUP)
    pos = 0
    for advance, markers in steps:
        pos = min(pos + advance, len(text))
        chosen = tuple(sorted(markers))
        assert finder.find(pos, chosen) == naive_find(text, pos, chosen)


def test_read_tag_name() -> None:
    assert read_tag_name("<function=ls>x", 10) == ("ls", 13)
    assert read_tag_name("<function=>x", 10) == (None, 11)
    assert read_tag_name("<function=a b>", 10) == (None, 14)
    assert read_tag_name("<function=a<b>", 10) == (None, 14)
    assert read_tag_name("<function=" + "a" * (TAG_NAME_SCAN + 1) + ">", 10) == (None, 10)
    assert read_tag_name("<function=" + "a" * TAG_NAME_SCAN + ">", 10)[0] == "a" * TAG_NAME_SCAN
