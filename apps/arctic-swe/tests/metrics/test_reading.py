"""Tests for ``arctic_swe.metrics._reading``: each variant's sentence says separated or not and
the measured reason — one seed, no channel, or a difference inside what the seeds resolve (the
half-width checked against the printed t table)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from arctic_swe.metrics import (
    ACTS,
    NO_CHANNEL,
    ComparisonRow,
    MechanismRow,
    PairedDifference,
    comparison_row,
    reading_markdown,
    reading_rows,
    seed_label,
)
from arctic_swe.metrics._reading import reason

from .conftest import evaluation, record

#: Student's t 0.975 quantiles (printed tables) by degrees of freedom.
T975 = {2: 4.3026527, 3: 3.1824463}


def _mechanism(channel: str, value: float) -> MechanismRow:
    """The no-eviction row: full retired ``value`` tasks (floor 1, read in full)."""
    return MechanismRow(
        variant="no-eviction", mechanism="eviction: tasks retired", seeds=4,
        figures=("retired",), in_variant={"retired": 0.0}, in_reference={"retired": value},
        channel_value=value, floor=1.0, rule="in full", channel=channel,
    )  # fmt: skip


def _difference(*values: float) -> PairedDifference:
    return PairedDifference(tuple(range(len(values))), values)


def test_without_a_paired_seed_or_with_one_there_is_no_interval() -> None:
    assert reason(None, None) == "no seed measured both runs' final windows"
    assert reason(_difference(), None) == "no seed measured both runs' final windows"
    assert reason(_difference(-0.1), _mechanism(ACTS, 3.0)) == (
        "one paired seed (Δ -0.100): no interval over seeds"
    )


def test_an_interval_that_excludes_zero_is_separated_whatever_the_channel() -> None:
    text = reason(_difference(-0.2, -0.25, -0.3), _mechanism(NO_CHANNEL, 0.0))
    assert text.startswith("separated: the 95 % t interval over seeds lies below 0 (Δ -0.250 [")
    assert text.endswith("3 of 3 below full)")


def test_no_channel_is_named_with_its_figure_and_floor() -> None:
    text = reason(_difference(0.05, -0.05, 0.0), _mechanism(NO_CHANNEL, 0.0))
    assert text.startswith("not separated: no channel at this scale (retired 0 < 1, in full); ")


def test_a_mechanism_that_acts_gets_the_half_width_the_seeds_resolve() -> None:
    differences = (0.1, -0.05, 0.0, 0.05)
    mean = sum(differences) / 4
    sd = math.sqrt(sum((d - mean) ** 2 for d in differences) / 3)
    half = T975[3] * sd / 2  # t_{0.975, 3} * sd / sqrt(4)
    text = reason(_difference(*differences), _mechanism(ACTS, 3.0))
    assert text.startswith(
        f"not separated: the mechanism acts, but the difference lies inside what 4 paired "
        f"seeds resolve (95 % half-width {half:.3f} from the per-seed differences' SD {sd:.3f}); "
        f"Δ {mean:+.3f} [{mean - half:+.3f}, {mean + half:+.3f}], 1 of 4 below full"
    )
    assert reason(_difference(*differences), None).startswith("not separated: the difference")


def _run(label: str, final: int, updates: int = 6) -> ComparisonRow:
    """Pool and held-out evaluations at 0 (8 of 16 solved) and at the last update (``final``)."""
    evaluations = [evaluation(split, step, n) for split in ("pool", "heldout")
                   for step, n in ((0, 8), (updates, final))]  # fmt: skip
    return comparison_row(label, [record(s, 0.5) for s in range(1, updates + 1)], evaluations)


def _rows(finals: dict[str, Sequence[int]]) -> list[ComparisonRow]:
    return [
        _run(seed_label(variant, seed), final)
        for variant, per_seed in finals.items()
        for seed, final in enumerate(per_seed)
    ]


def test_every_variant_but_full_gets_one_reading_in_the_paired_order() -> None:
    rows = _rows({"full": [12, 12, 13], "ungated": [4, 5, 4], "no-eviction": [12, 13, 12]})
    readings = reading_rows(rows)
    assert [r.variant for r in readings] == ["ungated", "no-eviction"]
    ungated, no_eviction = readings
    assert (ungated.pool, ungated.heldout) == ("separated (below full)",) * 2
    assert no_eviction.pool == "not separated"
    # full retired nothing in these runs: no-eviction trained on the very same deck
    assert no_eviction.reason.startswith("not separated: no channel at this scale (retired 0 < 1")
    assert no_eviction.channel == NO_CHANNEL
    markdown = reading_markdown(readings)
    assert markdown.splitlines()[0].startswith("| variant | pool vs full | held-out vs full |")
    assert len(markdown.splitlines()) == 4


def test_without_full_there_is_nothing_to_read() -> None:
    assert reading_rows(_rows({"ungated": [4, 5], "clip": [6, 7]})) == []
