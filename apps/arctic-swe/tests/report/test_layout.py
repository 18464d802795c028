"""The committable form of the data: deterministic gzip, machine paths redacted."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arctic_swe.report import MACHINE, ReportError, gzip_bytes, redact, redact_path, redact_words
from arctic_swe.report._layout import check_label, gzip_json_lines, is_machine_path


@given(st.binary(max_size=4096))
def test_gzip_is_deterministic_and_round_trips(data: bytes) -> None:
    packed = gzip_bytes(data)
    assert packed == gzip_bytes(data)
    assert gzip.decompress(packed) == data
    assert packed[4:8] == b"\0\0\0\0"  # the header's modification time is 0


def test_gzip_json_lines_reads_objects_and_refuses_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl.gz"
    path.write_bytes(gzip_bytes(b'{"a": 1}\n\n{"b": 2}\n'))
    assert list(gzip_json_lines(path)) == [{"a": 1}, {"b": 2}]
    path.write_bytes(gzip_bytes(b'{"a": 1}\n[1]\n'))
    with pytest.raises(ReportError, match=":2: not a JSON object"):
        list(gzip_json_lines(path))
    path.write_bytes(b"not gzip")
    with pytest.raises(ReportError, match="cannot be read"):
        list(gzip_json_lines(path))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/home/me/runs/deck", f"{MACHINE}/deck"),
        ("/home/me/runs/deck/", f"{MACHINE}/deck"),
        ("~/decks/tasks.jsonl", f"{MACHINE}/tasks.jsonl"),
        ("C:\\runs\\policy", f"{MACHINE}/policy"),
        ("procedural", "procedural"),
        ("runs/ab/full", "runs/ab/full"),
        ("/", "/"),
        ("http://10.0.0.1:8000", "http://10.0.0.1:8000"),
    ],
)
def test_a_machine_path_keeps_only_its_name(text: str, expected: str) -> None:
    assert redact_path(text) == expected


@given(st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=40))
def test_redaction_leaves_no_machine_path_and_is_idempotent(text: str) -> None:
    once = redact_path(text)
    assert redact_path(once) == once
    assert not is_machine_path(once)


def test_redact_walks_nested_data_and_keeps_keys() -> None:
    data = {"/k": ["/a/b", {"deck": "/x/deck", "n": 3}], "seed": 1}
    assert redact(data) == {"/k": [f"{MACHINE}/b", {"deck": f"{MACHINE}/deck", "n": 3}], "seed": 1}


def test_free_text_has_each_machine_path_redacted() -> None:
    text = "ablate --out /srv/me/ab --deck=/srv/me/deck --set run.updates=9, load 3/2 ('/srv/x')"
    assert redact_words(text) == (
        f"ablate --out {MACHINE}/ab --deck={MACHINE}/deck --set run.updates=9, load 3/2 "
        f"('{MACHINE}/x')"
    )


@pytest.mark.parametrize("label", ["", "/abs", "a//b", "../up", "a/./b", "a\\b", "~/x"])
def test_a_label_that_cannot_name_a_data_directory_is_refused(label: str) -> None:
    with pytest.raises(ReportError, match="cannot name a directory"):
        check_label(label)
    assert check_label("full/seed-3") == "full/seed-3"


@given(st.lists(st.sampled_from(["/a/b", "~/c", "x", "=", " ", "(", "'", ",", "C:\\d", "3/2"])))
def test_no_word_of_redacted_text_is_a_machine_path(pieces: list[str]) -> None:
    from arctic_swe.report._layout import _WORD

    redacted = redact_words("".join(pieces))
    assert not any(is_machine_path(word) for word in _WORD.findall(redacted))
    assert redact_words(redacted) == redacted
