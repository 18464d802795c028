"""JSON-lines records: round trip, resumability, crash-torn tails, the verdict taxonomy."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from swe_curate._errors import CurateError
from swe_curate._records import CurationRecord, RecordStore, summarize
from swe_curate._verdicts import Verdict

_json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.text(max_size=20))
_json = st.recursive(
    _json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(
    instance_id=st.text(min_size=1, max_size=30),
    verdict=st.sampled_from(list(Verdict)),
    measurements=st.dictionaries(st.text(max_size=8), _json, max_size=4),
    rewritten=st.none() | st.text(max_size=40),
)
def test_record_json_round_trip(
    instance_id: str, verdict: Verdict, measurements: dict[str, object], rewritten: str | None
) -> None:
    rec = CurationRecord(
        instance_id, "judge", verdict, "why", measurements, ({"patch": "x"},), rewritten, 1.5, 42.0
    )
    line = rec.to_json()
    assert "\n" not in line
    assert CurationRecord.from_json(line) == rec


def test_store_resumes_and_survives_a_torn_tail(tmp_path: Path) -> None:
    store = RecordStore(tmp_path / "out" / "records.jsonl")
    assert store.done("audit") == set()
    store.append(CurationRecord("a", "audit", Verdict.ADMITTED))
    store.append(CurationRecord("b", "audit", Verdict.FLAKY, "test_x flipped"))
    store.append(CurationRecord("a", "judge", Verdict.TOO_LOOSE))
    with store.path.open("a") as handle:  # a crash in the middle of writing a record
        handle.write('{"instance_id": "c", "stage": "au')
    assert store.done("audit") == {"a", "b"}
    assert store.done("judge") == {"a"}
    store.append(CurationRecord("c", "audit", Verdict.GOLD_FAILS))
    assert [r.instance_id for r in store.records("audit")] == ["a", "b", "c"]
    assert store.latest("audit")["b"].reason == "test_x flipped"
    counts = summarize(store.records())
    assert counts == {
        Verdict.ADMITTED: 1,
        Verdict.FLAKY: 1,
        Verdict.TOO_LOOSE: 1,
        Verdict.GOLD_FAILS: 1,
    }


def test_corrupt_line_in_the_middle_is_a_typed_error(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"instance_id": "a"}\n')
    with pytest.raises(CurateError, match="not a task record"):
        RecordStore(path).records()


def test_verdict_polarity() -> None:
    positive = {v for v in Verdict if v.is_positive}
    assert positive == {
        Verdict.ADMITTED,
        Verdict.ACCEPTED,
        Verdict.ISSUE_REWRITTEN,
        Verdict.STRENGTHENED,
        Verdict.INJECTED,
    }
    assert Verdict("too_loose") is Verdict.TOO_LOOSE


class RecordStoreMachine(RuleBasedStateMachine):
    """Appends, crashes mid-write and reopenings in any order: a reopened store always knows
    exactly the records whose append completed, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="curate-store-"))
        self.store = RecordStore(self.dir / "records.jsonl")
        self.model: list[tuple[str, str]] = []

    @rule(
        instance_id=st.sampled_from(["a", "b", "c", "d"]), stage=st.sampled_from(["audit", "judge"])
    )
    def append(self, instance_id: str, stage: str) -> None:
        self.store.append(CurationRecord(instance_id, stage, Verdict.ADMITTED))
        self.model.append((instance_id, stage))

    @rule(cut=st.integers(1, 40))
    def crash_mid_write(self, cut: int) -> None:
        line = CurationRecord("torn", "audit", Verdict.FLAKY).to_json()
        with self.store.path.open("a", encoding="utf-8") as handle:
            handle.write(line[: min(cut, len(line) - 1)])

    @rule()
    def reopen(self) -> None:
        self.store = RecordStore(self.store.path)

    @invariant()
    def knows_exactly_the_completed_records(self) -> None:
        assert [(r.instance_id, r.stage) for r in self.store] == self.model
        for stage in ("audit", "judge"):
            assert self.store.done(stage) == {i for i, s in self.model if s == stage}

    def teardown(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


TestRecordStoreMachine = RecordStoreMachine.TestCase
TestRecordStoreMachine.settings = settings(max_examples=30, stateful_step_count=12, deadline=None)
