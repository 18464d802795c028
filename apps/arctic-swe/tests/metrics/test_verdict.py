"""Tests for ``arctic_swe.metrics._verdict``: the declared verdict against a slow readable
reference, its invariances (hypothesis), and hand-made runs for every label."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from arctic_swe._student import t_quantile
from arctic_swe.metrics import (
    CLIMBED_AND_HELD,
    CLIMBED_THEN_FELL,
    CLIMBED_UNCHECKED,
    FELL,
    HELDOUT_SPLIT,
    LABELS,
    NO_CHANGE,
    NOT_MEASURED,
    STILL_CLIMBING,
    EvalRecord,
    MetricsError,
    VerdictRule,
    run_verdict,
)

from .conftest import evaluations

# ----------------------------------------------------------------------------- the reference


def _reference_change(
    before: Sequence[EvalRecord], after: Sequence[EvalRecord], confidence: float
) -> tuple[float, float, float, int] | None:
    """(mean, low, high, tasks) of the per-task rate differences, written out longhand."""
    if not before or not after:
        return None
    tasks = set(before[0].outcomes)
    for record in [*before, *after]:
        tasks &= set(record.outcomes)
    differences = []
    for task in sorted(tasks):
        rates = []
        for side in (before, after):
            solved = cells = 0
            for record in side:
                for cell in record.outcomes[task]:
                    solved += cell == "1"
                    cells += 1
            rates.append(solved / cells)
        differences.append(rates[1] - rates[0])
    n = len(differences)
    if n == 0:
        return None
    mean = sum(differences) / n
    if n == 1:
        return mean, mean, mean, 1
    sd = math.sqrt(sum((d - mean) ** 2 for d in differences) / (n - 1))
    half = t_quantile(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n)
    return mean, mean - half, mean + half, n


def _reference(records: Sequence[EvalRecord], rule: VerdictRule) -> tuple[str, object, object]:
    """(label, climb, hold) by the rule as the module docstring states it."""
    kept: list[EvalRecord] = []
    for record in sorted((r for r in records if r.split == "pool"), key=lambda r: r.step):
        if kept and rule.every and 2 * (record.step - kept[-1].step) < rule.every:
            continue  # under half the cadence after the last kept evaluation
        kept.append(record)
    u = rule.updates
    start = [r for r in kept if r.step == 0]
    final = [r for r in kept if rule.final_start * u < r.step <= u]
    low, high = rule.reference
    reference = [r for r in kept if low * u < r.step <= high * u]
    climb = _reference_change(start, final, rule.confidence)
    hold = _reference_change(reference, final, rule.confidence)
    m = rule.margin
    if climb is None or climb[3] < 2:
        return NOT_MEASURED, climb, hold
    up, down = climb[1] > m, climb[2] < -m
    if hold is None or hold[3] < 2:
        label = CLIMBED_UNCHECKED if up else FELL if down else NO_CHANGE
    elif hold[2] < -m:
        label = CLIMBED_THEN_FELL if up else FELL
    elif down:
        label = FELL
    elif up:
        label = STILL_CLIMBING if hold[1] > m else CLIMBED_AND_HELD
    else:
        label = NO_CHANGE
    return label, climb, hold


# ----------------------------------------------------------------------------- generated runs


@st.composite
def runs(draw: st.DrawFn) -> tuple[list[EvalRecord], VerdictRule]:
    """A run evaluated every ``every`` updates (maybe from update 0, maybe with an extra final
    evaluation a few updates after the last grid one) and a rule over its length."""
    every = draw(st.integers(1, 6))
    grid = draw(st.integers(1, 8))
    extra = draw(st.integers(0, every - 1))
    tasks, samples = draw(st.integers(1, 5)), draw(st.integers(1, 3))
    steps = [every * k for k in range(0 if draw(st.booleans()) else 1, grid + 1)]
    if extra:
        steps.append(every * grid + extra)
    cell = st.text(alphabet="01", min_size=samples, max_size=samples)
    rows = {step: draw(st.lists(cell, min_size=tasks, max_size=tasks)) for step in steps}
    rule = VerdictRule(
        updates=every * grid + extra,
        every=draw(st.sampled_from([0, every])),
        confidence=draw(st.sampled_from([0.8, 0.95])),
        margin=draw(st.sampled_from([0.0, 0.03, 0.2])),
    )
    return evaluations(rows), rule


def _interval(change: object) -> tuple[float, float, float, int]:
    difference = change.difference  # type: ignore[attr-defined]
    return difference.mean, difference.low, difference.high, difference.n


@settings(max_examples=300)
@given(runs())
def test_the_verdict_matches_the_reference(run: tuple[list[EvalRecord], VerdictRule]) -> None:
    records, rule = run
    verdict = run_verdict(records, rule)
    label, climb, hold = _reference(records, rule)
    assert verdict.label == label
    assert verdict.label in LABELS
    for found, expected in ((verdict.climb, climb), (verdict.hold, hold)):
        if expected is None:
            assert found is None
        else:
            assert _interval(found) == pytest.approx(expected)


def _rename(records: Sequence[EvalRecord], names: dict[str, str]) -> list[EvalRecord]:
    return [
        EvalRecord(r.split, r.step, r.version, r.stream, r.seed,
                   {names[t]: c for t, c in r.outcomes.items()})
        for r in records
    ]  # fmt: skip


@given(runs(), st.randoms(use_true_random=False))
def test_relabelling_tasks_changes_nothing(run: tuple[list[EvalRecord], VerdictRule], rng) -> None:  # type: ignore[no-untyped-def]
    records, rule = run
    tasks = sorted(records[0].outcomes)
    shuffled = tasks[:]
    rng.shuffle(shuffled)
    renamed = run_verdict(_rename(records, dict(zip(tasks, shuffled, strict=True))), rule)
    verdict = run_verdict(records, rule)
    assert renamed.label == verdict.label
    if verdict.climb is not None:
        assert _interval(renamed.climb) == pytest.approx(_interval(verdict.climb))


@given(runs(), st.sampled_from("01"))
def test_a_constant_extra_sample_leaves_the_verdict(
    run: tuple[list[EvalRecord], VerdictRule], constant: str
) -> None:
    """One more sample per task with the same outcome at every evaluation scales every task's
    difference alike: the t statistics, hence the verdict at margin 0, do not change."""
    records, rule = run
    rule = VerdictRule(rule.updates, rule.every, confidence=rule.confidence, margin=0.0)
    verdict = run_verdict(records, rule)
    for change in (verdict.climb, verdict.hold):
        if change is not None and change.difference.sd > 0:  # a bound near 0 could round over
            assume(min(abs(change.difference.low), abs(change.difference.high)) > 1e-9)
    padded = [
        EvalRecord(r.split, r.step, r.version, r.stream, r.seed,
                   {t: c + constant for t, c in r.outcomes.items()})
        for r in records
    ]  # fmt: skip
    assert run_verdict(padded, rule).label == verdict.label


@given(runs())
def test_a_run_without_update_0_is_not_measured(run: tuple[list[EvalRecord], VerdictRule]) -> None:
    records, rule = run
    verdict = run_verdict([r for r in records if r.step != 0], rule)
    assert verdict.label == NOT_MEASURED
    assert verdict.climb is None
    assert not verdict.measured


@given(runs())
def test_flipping_every_outcome_negates_the_climb(
    run: tuple[list[EvalRecord], VerdictRule],
) -> None:
    records, rule = run
    flipped = [
        EvalRecord(r.split, r.step, r.version, r.stream, r.seed,
                   {t: c.translate(str.maketrans("01", "10")) for t, c in r.outcomes.items()})
        for r in records
    ]  # fmt: skip
    verdict, mirror = run_verdict(records, rule), run_verdict(flipped, rule)
    if verdict.climb is not None:
        assert mirror.climb is not None
        assert mirror.climb.difference.mean == pytest.approx(-verdict.climb.difference.mean)
        assert mirror.climb.above(rule.margin) == verdict.climb.below(rule.margin)


# ----------------------------------------------------------------------------- hand-made runs

TINY = VerdictRule(updates=36, every=9)  # evaluations at 0, 9, 18, 27, 36: reference {18}


def _climbing(final: str) -> dict[int, list[str]]:
    """Eight tasks: 0 of 2 solved at updates 0 and 9, 2 of 2 at 18, ``final`` at 27 and 36."""
    return {0: ["00"] * 8, 9: ["00"] * 8, 18: ["11"] * 8, 27: [final] * 8, 36: [final] * 8}


def test_a_climb_that_holds_falls_or_keeps_climbing() -> None:
    held = run_verdict(evaluations(_climbing("11")), TINY)
    assert held.label == CLIMBED_AND_HELD
    assert held.climb is not None
    assert held.climb.difference.mean == 1.0
    assert held.final_rate == 1.0
    assert held.climbed_and_held
    fell = run_verdict(evaluations(_climbing("10") | {18: ["11"] * 8}), TINY)
    assert fell.label == CLIMBED_THEN_FELL
    assert not fell.climbed_and_held
    rows = _climbing("11") | {18: ["10", "10", "10", "10", "11", "10", "10", "11"]}
    assert run_verdict(evaluations(rows), TINY).label == STILL_CLIMBING


def test_a_flat_run_on_fixed_streams_is_no_change() -> None:
    rows = {step: ["01", "00", "11", "10"] for step in range(0, 37, 9)}
    verdict = run_verdict(evaluations(rows), TINY)
    assert verdict.label == NO_CHANGE
    assert verdict.climb is not None
    assert verdict.climb.difference.sd == 0.0


def test_a_fall_below_the_warm_start_is_fell() -> None:
    rows = {0: ["11"] * 6, 9: ["11"] * 6, 18: ["00"] * 6, 27: ["00"] * 6, 36: ["00"] * 6}
    assert run_verdict(evaluations(rows), TINY).label == FELL


def test_the_margin_keeps_a_small_climb_from_counting() -> None:
    """Every task gains one sample in 16 after update 9, and keeps it."""
    rows = {0: ["0" * 16] * 4, 9: ["0" * 16] * 4}
    rows |= {step: ["1" + "0" * 15] * 4 for step in (18, 27, 36)}
    bare = VerdictRule(updates=36, every=9, margin=0.0)
    assert run_verdict(evaluations(rows), bare).label == CLIMBED_AND_HELD  # +1/16, sd 0
    assert run_verdict(evaluations(rows), VerdictRule(36, 9, margin=0.1)).label == NO_CHANGE


def test_missing_windows_say_what_is_missing() -> None:
    short = run_verdict(evaluations({0: ["00"] * 4, 36: ["11"] * 4}), TINY)
    assert short.label == CLIMBED_UNCHECKED
    assert "reference window (updates 13-24)" in short.reason
    none = run_verdict([], TINY)
    assert none.label == NOT_MEASURED
    assert "no pool evaluation" in none.reason
    late = run_verdict(evaluations({9: ["00"] * 4, 36: ["11"] * 4}), TINY)
    assert late.label == NOT_MEASURED
    assert "update 0" in late.reason
    early = run_verdict(evaluations({0: ["00"] * 4, 9: ["11"] * 4}), TINY)
    assert early.label == NOT_MEASURED
    assert "final window (updates 25-36)" in early.reason
    one = run_verdict(evaluations({0: ["00"], 18: ["11"], 36: ["11"]}), TINY)
    assert one.label == NOT_MEASURED  # one task: no interval over tasks


def test_the_extra_final_evaluation_is_left_out_of_the_final_window() -> None:
    """Stopped at 110: the grid's 108 is kept, the loop's extra 110 (2 updates later) is not."""
    steps = [*range(0, 109, 9), 110]
    rows = {step: ["00"] * 4 if step != 110 else ["11"] * 4 for step in steps}
    verdict = run_verdict(evaluations(rows), VerdictRule(updates=110, every=9))
    assert verdict.left_out == (110,)
    assert verdict.final is not None
    assert verdict.final.steps == (81, 90, 99, 108)
    assert verdict.label == NO_CHANGE  # the 110 evaluation's climb is not counted
    unthinned = run_verdict(evaluations(rows), VerdictRule(updates=110, every=0))
    assert unthinned.final is not None
    assert unthinned.final.steps[-1] == 110


def test_the_heldout_climb_is_beside_the_verdict() -> None:
    pool = evaluations({step: ["01"] * 4 for step in range(0, 37, 9)})
    heldout = evaluations(_climbing("11"), split=HELDOUT_SPLIT)
    verdict = run_verdict([*pool, *heldout], TINY)
    assert verdict.label == NO_CHANGE  # the pool is flat; the held-out climb does not count
    assert verdict.heldout is not None
    assert verdict.heldout.difference.mean == 1.0
    assert verdict.heldout_text().startswith("0.000 → 1.000: +1.000")


def test_each_figure_says_what_its_interval_includes() -> None:
    verdict = run_verdict(evaluations(_climbing("11")), TINY)
    assert verdict.climb_text().endswith("(t over 8 tasks, paired, 95 %)")
    assert verdict.final_text() == "32 / 32 (updates 27-36, 2 evaluations)"
    other = evaluations({36: ["11"] * 8}, stream="other")
    mixed = run_verdict([*evaluations(_climbing("11"))[:-1], *other], TINY)
    assert mixed.climb is not None
    assert not mixed.climb.paired
    assert "unpaired streams" in mixed.climb_text()
    assert run_verdict([], TINY).climb_text() == NOT_MEASURED
    assert "paired per task, 95 % t intervals" in TINY.describe()


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"updates": 0}, "verdict over 0 updates"),
        ({"every": -1}, "every -1"),
        ({"reference": (0.5, 0.4)}, "reference start < reference end"),
        ({"final_start": 0.5}, "final start"),
        ({"final_start": 1.0}, "final start < 1"),
        ({"confidence": 1.0}, "confidence"),
        ({"margin": -0.1}, "margin"),
    ],
)
def test_a_bad_rule_is_a_metrics_error(changes: dict[str, object], words: str) -> None:
    with pytest.raises(MetricsError, match=words):
        VerdictRule(**{"updates": 36, **changes})  # type: ignore[arg-type]
