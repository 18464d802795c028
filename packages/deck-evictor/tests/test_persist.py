"""Crash-safe state files: round trip, exact resumption, corrupt/foreign files, SIGKILL mid-save."""

from __future__ import annotations

from pathlib import Path

import pytest

from deck_evictor import CorruptStateError, Deck, EvictionRules, ForeignStateError, ReplayPolicy
from deck_evictor._persist import encode, write_state
from deck_evictor.testing import check_crash_safety

CRASH_POOL = Path(__file__).with_name("_crash_pool.py")


def busy_deck() -> Deck:
    deck = Deck(
        [f"t{i}" for i in range(30)],
        rules=EvictionRules(hard_consecutive_zero=2, min_group_size=2),
        replay=ReplayPolicy(every=2, size=3, reactivate_below=0.5),
        seed=9,
    )
    for update in range(1, 8):
        deck.advance(update)
        for j, task_id in enumerate(deck.sample(7).task_ids):
            deck.record(task_id, (update * 3 + j) % 9, 8)
        for task_id in deck.replay_schedule():
            deck.record_replay(task_id, update % 9, 8)
    return deck


def test_save_load_round_trips_and_continues_the_same_draws(tmp_path: Path) -> None:
    deck = busy_deck()
    path = tmp_path / "deck.state"
    deck.save(path)
    resumed = Deck.load(path)
    assert resumed.state_dict() == deck.state_dict()
    assert resumed.retired == deck.retired
    assert resumed.rules == deck.rules
    assert resumed.replay_policy == deck.replay_policy
    for _ in range(10):
        assert resumed.sample(5) == deck.sample(5)
    assert not (tmp_path / "deck.state.tmp").exists()


def test_corrupt_file_raises_and_is_not_replaced_by_load(tmp_path: Path) -> None:
    path = tmp_path / "deck.state"
    busy_deck().save(path)
    good = path.read_bytes()
    middle = len(good) // 2
    flipped = good[:middle] + bytes([good[middle] ^ 0x01]) + good[middle + 1 :]
    for damaged in (
        good[:-10],
        good[:40],
        good.replace(b'"seed":9', b'"seed":8'),
        flipped,
        b"",
        good[:5],
    ):
        path.write_bytes(damaged)
        with pytest.raises(CorruptStateError):
            Deck.load(path)
        assert path.read_bytes() == damaged  # loading never writes


@pytest.mark.parametrize(
    "content",
    [
        b"{}",
        b'{"tasks": []}',
        b"\x00\x01binary",
        b"deck-evictor-state v2 sha256=" + b"0" * 64 + b" bytes=0\n",
    ],
)
def test_foreign_files_are_refused_with_typed_errors(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "other.json"
    path.write_bytes(content)
    with pytest.raises(ForeignStateError):
        Deck.load(path)


def test_save_refuses_to_overwrite_a_foreign_file_but_replaces_a_corrupt_state(
    tmp_path: Path,
) -> None:
    foreign = tmp_path / "config.json"
    foreign.write_bytes(b'{"learning_rate": 1e-6}')
    with pytest.raises(ForeignStateError):
        busy_deck().save(foreign)
    assert foreign.read_bytes() == b'{"learning_rate": 1e-6}'
    with pytest.raises(ForeignStateError):
        busy_deck().save(tmp_path)
    damaged = tmp_path / "deck.state"
    busy_deck().save(damaged)
    damaged.write_bytes(damaged.read_bytes()[:100])
    busy_deck().save(damaged)
    assert Deck.load(damaged).state_dict() == busy_deck().state_dict()


def test_a_checksummed_but_inconsistent_payload_is_corrupt(tmp_path: Path) -> None:
    state = busy_deck().state_dict()
    path = tmp_path / "deck.state"
    variants = [
        {**state, "retired_order": []},
        {**state, "update": -1},
        {**state, "rules": {"easy": "sometimes"}},
        {**state, "tasks": {**state["tasks"], "groups": [1]}},
        {**state, "sampler": {**state["sampler"], "cursor": 10**6}},
        {key: value for key, value in state.items() if key != "seed"},
    ]
    for payload in variants:
        path.write_bytes(encode(payload))
        with pytest.raises(CorruptStateError):
            Deck.load(path)


def test_a_state_that_cannot_be_encoded_never_replaces_a_good_file(tmp_path: Path) -> None:
    path = tmp_path / "deck.state"
    busy_deck().save(path)
    good = path.read_bytes()
    with pytest.raises(ValueError, match="JSON"):
        write_state(path, {"rate": float("nan")})  # strict JSON has no NaN: refused up front
    assert path.read_bytes() == good


def test_empty_deck_round_trips(tmp_path: Path) -> None:
    deck = Deck([], seed=0)
    assert deck.sample(3).exhausted
    deck.save(tmp_path / "empty.state")
    assert Deck.load(tmp_path / "empty.state").state_dict() == deck.state_dict()


def test_state_dict_is_a_copy() -> None:
    deck = busy_deck()
    state = deck.state_dict()
    state["sampler"]["order"].clear()
    state["tasks"]["groups"][0] = 99
    assert deck.state_dict() != state


def test_missing_file_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        Deck.load(tmp_path / "absent.state")


def test_sigkill_at_random_instants_leaves_old_or_new_state_and_resumes_exactly(
    tmp_path: Path,
) -> None:
    """Kill a real writer process at random instants inside saves, 12 times, resuming each time.

    After every kill the file must load and hold the state after the last acknowledged save or
    the one after it, equal to a reference deck stepped in this process; the next writer resumes
    from the file, so the final state also proves the resumed decks continued exactly.
    """
    report = check_crash_safety(str(CRASH_POOL), tmp_path, kills=12, seed=7)
    assert report.final_step >= 4  # the writers made progress across resumptions
    # Kills between a save's `begin` and `saved` lines hit the phase where a non-atomic writer
    # would tear the state; typically most of the 12 do.
    print(f"kills inside a save: {report.inside_save} of 12")
    assert report.inside_save >= 1


def test_a_state_written_before_mastery_and_reactivation_counts_still_loads() -> None:
    """A checkpoint from before ``mastered_groups`` and the two new task columns: it loads,
    reactivations start at 0 and the all-correct streak is what the last group shows."""
    deck = busy_deck()
    old = deck.state_dict()
    del old["rules"]["mastered_groups"]
    del old["tasks"]["consecutive_all_correct"]
    del old["tasks"]["times_reactivated"]
    loaded = Deck.from_state_dict(old)
    assert loaded.rules == deck.rules
    assert loaded.reactivations == 0
    columns = old["tasks"]
    for task_id, wins, n in zip(
        columns["task_ids"], columns["last_successes"], columns["last_n"], strict=True
    ):
        assert loaded.stats(task_id).consecutive_all_correct == int(n > 0 and wins == n)
    for _ in range(5):
        assert loaded.sample(4) == deck.sample(4)


def test_reactivations_and_streaks_round_trip(tmp_path: Path) -> None:
    deck = busy_deck()
    assert deck.reactivations > 0  # busy_deck's probes bring some tasks back
    path = tmp_path / "deck.state"
    deck.save(path)
    resumed = Deck.load(path)
    assert resumed.reactivations == deck.reactivations
    assert [resumed.stats(t) for t in resumed.task_ids] == [deck.stats(t) for t in deck.task_ids]
