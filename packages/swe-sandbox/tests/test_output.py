"""`_output.BoundedOutput`: bounded memory, exact text when short, marker when cut."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from swe_sandbox._output import BoundedOutput


@given(st.lists(st.binary(max_size=50), max_size=30), st.integers(min_value=4, max_value=200))
def test_head_and_tail_of_the_stream_are_kept(chunks: list[bytes], limit: int) -> None:
    sink = BoundedOutput(limit)
    for chunk in chunks:
        sink.feed(chunk)
    whole = b"".join(chunks)
    assert sink.total == len(whole)
    if len(whole) <= limit:
        assert not sink.truncated
        assert sink.text() == whole.decode(errors="replace")
    else:
        assert sink.truncated
        head = (limit * 3) // 4
        text = sink.text()
        assert text.startswith(whole[:head].decode(errors="replace"))
        tail = whole[len(whole) - (limit - head) :]
        assert text.endswith(tail.decode(errors="replace"))
        assert f"{len(whole) - limit} of {len(whole)} bytes dropped" in text


def test_ten_megabytes_keep_only_the_limit() -> None:
    sink = BoundedOutput(1000)
    block = b"y\n" * 32768
    for _ in range(160):  # 10 MiB
        sink.feed(block)
    assert sink.total == 160 * len(block)
    assert len(sink.text()) < 1200
    assert sink._tail_size <= 2 * len(block)
