"""Tests for ``arctic_swe.config._run_inputs``: a directory digest that follows content only,
and the ``inputs.json`` record's round trip and typed errors."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arctic_swe.config import (
    INPUTS_FILE,
    RunDir,
    RunDirError,
    RunInputs,
    content_digest,
    directory_digest,
    fingerprint_inputs,
    read_run_inputs,
    write_run_inputs,
)


def _tree(root: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def _reference(files: dict[str, bytes]) -> str:
    """The documented digest, spelled out: sorted paths, each path NUL bytes NUL."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + files[name] + b"\0")
    return digest.hexdigest()


FILES = {"deck.json": b'{"tasks": 3}', "tokenizer/tokenizer.json": b"{}", "repos/a/x.py": b"1"}


def test_the_digest_is_the_documented_one_whatever_the_creation_order(tmp_path: Path) -> None:
    forward = _tree(tmp_path / "a", FILES)
    backward = _tree(tmp_path / "b", dict(reversed(list(FILES.items()))))
    assert directory_digest(forward) == directory_digest(backward) == _reference(FILES)


def test_content_names_and_extra_files_change_the_digest(tmp_path: Path) -> None:
    base = directory_digest(_tree(tmp_path / "base", FILES))
    changed = directory_digest(_tree(tmp_path / "c", {**FILES, "repos/a/x.py": b"2"}))
    renamed = dict(FILES)
    renamed["repos/a/y.py"] = renamed.pop("repos/a/x.py")
    moved = directory_digest(_tree(tmp_path / "m", renamed))
    extra = directory_digest(_tree(tmp_path / "e", {**FILES, "notes.txt": b""}))
    assert len({base, changed, moved, extra}) == 4


def test_skipped_patterns_leave_the_digest_alone(tmp_path: Path) -> None:
    weights = {"config.json": b"{}", "model.safetensors": b"w"}
    plain = directory_digest(_tree(tmp_path / "p", weights))
    logged = _tree(tmp_path / "l", {**weights, "expert.jsonl": b'{"seconds": 1.2}'})
    assert directory_digest(logged, skip=("*.jsonl",)) == plain
    assert directory_digest(logged) != plain


def test_a_missing_directory_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(RunDirError, match="not a directory"):
        directory_digest(tmp_path / "gone")
    with pytest.raises(RunDirError, match="neither a file nor a directory"):
        content_digest(tmp_path / "gone")


def test_a_file_is_digested_by_its_bytes_and_a_directory_as_a_tree(tmp_path: Path) -> None:
    rows = tmp_path / "tasks.jsonl"
    rows.write_bytes(b'{"instance_id": "a"}\n')
    assert content_digest(rows) == hashlib.sha256(rows.read_bytes()).hexdigest()
    tree = _tree(tmp_path / "deck", FILES)
    assert content_digest(tree) == directory_digest(tree) == _reference(FILES)


hexes = st.text(alphabet="0123456789abcdef", min_size=64, max_size=64)


@given(deck=st.text(min_size=1, max_size=30), policy=st.text(min_size=1, max_size=30),
       deck_sha=hexes, policy_sha=hexes)  # fmt: skip
def test_the_record_round_trips(deck: str, policy: str, deck_sha: str, policy_sha: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as root:
        run = RunDir(Path(root))
        record = RunInputs(deck, deck_sha, policy, policy_sha)
        write_run_inputs(run, record)
        assert read_run_inputs(run) == record


def test_a_run_without_the_record_has_none(tmp_path: Path) -> None:
    assert read_run_inputs(RunDir(tmp_path)) is None


@pytest.mark.parametrize(
    "text",
    ["not json", "[]", '{"deck": "d"}',
     '{"deck": "d", "deck_sha256": "xyz", "policy": "p", "policy_sha256": "' + "0" * 64 + '"}'],
)  # fmt: skip
def test_a_broken_record_is_a_typed_error(tmp_path: Path, text: str) -> None:
    (tmp_path / INPUTS_FILE).write_text(text)
    with pytest.raises(RunDirError, match="not a run inputs record"):
        read_run_inputs(RunDir(tmp_path))


def test_fingerprint_inputs_digests_both_directories(tmp_path: Path) -> None:
    deck = _tree(tmp_path / "deck", FILES)
    weights = {"config.json": b"{}", "model.safetensors": b"w"}
    policy = _tree(tmp_path / "policy", {**weights, "expert.jsonl": b'{"seconds": 3.1}'})
    record = fingerprint_inputs(deck, policy)
    assert record.deck_sha256 == _reference(FILES)
    # the expert trajectories' log (wall times) is not the policy: left out of its digest
    assert record.policy_sha256 == _reference(weights)
    assert (
        record.short() == f"deck {_reference(FILES)[:12]}, warm start {record.policy_sha256[:12]}"
    )
    assert record.same_content(fingerprint_inputs(_tree(tmp_path / "d2", FILES), policy))
    assert not record.same_content(fingerprint_inputs(policy, policy))
