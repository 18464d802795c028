"""The stress test's verdict, declared before the run (Arctic-SWE §3.1: the pool success
climbs *and holds*).

Every quantity is fixed in advance by the ``[verdict]`` section and the run's length: a
**reference** window and a **final** window (fractions of the run's updates, ``(start, end]``),
a confidence and a margin. Nothing is chosen after the fact — in particular not the best
window, which a noisy flat curve always offers.

Both comparisons are **paired per task**: each evaluation samples task ``k``'s sample ``s``
from the same stream, so the same task of two evaluations differs by the policy (and by the
sampling luck the streams do not fix), and the unit of the interval is the task:

- **climb**: for each task, its success rate over the final window's evaluations and samples
  minus its rate at update 0 (the warm start, evaluated by the same evaluator on the same
  streams); the mean over tasks with a Student-t interval over tasks. *Climbed* iff the
  interval lies above ``margin``.
- **hold**: the same with the reference window in place of update 0. *Fell* iff the interval
  lies below ``-margin``.

Near-identical weights are not pooled: of two evaluations less than half the evaluation cadence
apart (the loop's extra final evaluation at update 110 after the grid's 108), the later is left
out, so no window counts one policy twice. Only recorded rollout outcomes enter (the imputed
eviction-adjusted reward never does). The held-out split gets the same paired climb, reported
beside the verdict, never part of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from arctic_swe.metrics._evaluations import (
    FINAL_WINDOW,
    HELDOUT_SPLIT,
    POOL_SPLIT,
    REFERENCE_WINDOW,
    EvalRecord,
    in_window,
    of_split,
)
from arctic_swe.metrics._record import MetricsError
from arctic_swe.metrics._windows import EvalWindow, PairedChange, paired_change, thin, window

NOT_MEASURED = "not measured"
CLIMBED_AND_HELD = "climbed and held"
STILL_CLIMBING = "climbed, still climbing"
CLIMBED_THEN_FELL = "climbed, then fell"
CLIMBED_UNCHECKED = "climbed (hold not measured)"
FELL = "fell"
NO_CHANGE = "no measurable change"
#: Every label :func:`run_verdict` gives.
LABELS = (
    CLIMBED_AND_HELD,
    STILL_CLIMBING,
    CLIMBED_THEN_FELL,
    CLIMBED_UNCHECKED,
    FELL,
    NO_CHANGE,
    NOT_MEASURED,
)


@dataclass(frozen=True)
class VerdictRule:
    """What a verdict compares, fixed before the run.

    ``updates``: the run's length the windows are fractions of (``run.updates``, or the update
    a run stopped at by its own stopping rule); ``every``: the evaluation cadence
    (``run.pool_eval_every``; 0: nothing is thinned); ``reference``: ``(start, end]`` and
    ``final_start``: the final window ``(final_start, 1]``; ``confidence`` of the two-sided t
    intervals; ``margin``: a change smaller than this is never a climb nor a fall.
    """

    updates: int
    every: int = 0
    reference: tuple[float, float] = REFERENCE_WINDOW
    final_start: float = FINAL_WINDOW[0]
    confidence: float = 0.95
    margin: float = 0.03  # the [verdict] section's default (results/stress-test.md)

    def __post_init__(self) -> None:
        start, end = self.reference
        if self.updates < 1 or self.every < 0:
            raise MetricsError(f"verdict over {self.updates} updates every {self.every}")
        if not 0.0 <= start < end <= self.final_start < 1.0:
            raise MetricsError(
                f"verdict windows must satisfy 0 <= reference start < reference end <= final "
                f"start < 1, got reference {self.reference}, final start {self.final_start}"
            )
        if not 0.0 < self.confidence < 1.0 or not 0.0 <= self.margin < 1.0:
            raise MetricsError(
                f"verdict confidence {self.confidence} must lie in (0, 1) and margin "
                f"{self.margin} in [0, 1)"
            )

    @property
    def final(self) -> tuple[float, float]:
        return (self.final_start, 1.0)

    def steps(self, window: tuple[float, float]) -> str:
        """``"updates 121-240"``: the updates ``window`` covers in this run."""
        low = int(window[0] * self.updates) + 1
        return f"updates {low}-{int(window[1] * self.updates)}"

    def window_records(
        self, evaluations: Sequence[EvalRecord], split: str, window: tuple[float, float]
    ) -> list[EvalRecord]:
        """``split``'s evaluations in ``window`` (fractions of :attr:`updates`), near-identical
        weights thinned out first: the one definition of a window the verdict and the seed
        comparison both read."""
        kept, _ = thin(of_split(evaluations, split), self.every)
        return in_window(kept, self.updates, window)

    def describe(self) -> str:
        """The rule in one line."""
        margin = f" by more than {self.margin:g}" if self.margin else ""
        return (
            f"climbed: final window ({self.steps(self.final)}) above update 0{margin}; fell: "
            f"final below the reference window ({self.steps(self.reference)}){margin}; "
            f"paired per task, {self.confidence * 100:g} % t intervals over tasks"
        )


@dataclass(frozen=True)
class RunVerdict:
    """The verdict of one run under ``rule``.

    ``climb``: pool, update 0 → final window; ``hold``: pool, reference → final window;
    ``heldout``: the held-out split, update 0 → final window (reported beside, never part of
    ``label``); ``final``: the pool's final window over the tasks all its evaluations hold
    (``None``: no evaluation there); each figure ``None`` when a side is missing. ``left_out``:
    pool evaluations thinned out (:func:`~arctic_swe.metrics._windows.thin`); ``reason``: why
    the label is "not measured" or the hold is missing, empty otherwise.
    """

    label: str
    rule: VerdictRule
    climb: PairedChange | None = None
    hold: PairedChange | None = None
    heldout: PairedChange | None = None
    final: EvalWindow | None = None
    left_out: tuple[int, ...] = ()
    reason: str = ""

    @property
    def measured(self) -> bool:
        return self.label != NOT_MEASURED

    @property
    def final_rate(self) -> float | None:
        """The pool's final-window success (``None``: not measured)."""
        return None if self.final is None else self.final.rate

    @property
    def climbed_and_held(self) -> bool:
        """The paper's claim: climbed, and did not fall (held, or still climbing)."""
        return self.label in (CLIMBED_AND_HELD, STILL_CLIMBING)

    def climb_text(self) -> str:
        """The pool's update 0 → final change, with what its interval includes."""
        return _text(self.climb)

    def hold_text(self) -> str:
        """The pool's reference → final change, with what its interval includes."""
        return _text(self.hold)

    def heldout_text(self) -> str:
        """The held-out split's update 0 → final change, with what its interval includes."""
        return _text(self.heldout)

    def final_text(self) -> str:
        """``"412 / 576 (updates 252-360, 13 evaluations)"``: the pool's final window."""
        if self.final is None:
            return NOT_MEASURED
        return f"{self.final.solved} / {self.final.rollouts} ({self.final.where()})"


def _text(change: PairedChange | None) -> str:
    return NOT_MEASURED if change is None else change.describe()


def _label(climb: PairedChange, hold: PairedChange | None, margin: float) -> str:
    up, down = climb.above(margin), climb.below(margin)
    if hold is None or not hold.difference.defined:
        return CLIMBED_UNCHECKED if up else (FELL if down else NO_CHANGE)
    if hold.below(margin):
        return CLIMBED_THEN_FELL if up else FELL
    if down:
        return FELL  # below the warm start, though not measurably below the reference
    if up:
        return STILL_CLIMBING if hold.above(margin) else CLIMBED_AND_HELD
    return NO_CHANGE


def _climb(
    records: Sequence[EvalRecord], rule: VerdictRule
) -> tuple[PairedChange | None, list[EvalRecord]]:
    """One split's paired climb (update 0 → final window) and its final window's records."""
    start = [r for r in records if r.step == 0]
    final = in_window(records, rule.updates, rule.final)  # records: thinned by the caller
    return paired_change(start, final, rule.confidence), final


def run_verdict(evaluations: Sequence[EvalRecord], rule: VerdictRule) -> RunVerdict:
    """The verdict of a run from its evaluations (``RUN/evaluations.jsonl``, any order)."""
    pool, left_out = thin(of_split(evaluations, POOL_SPLIT), rule.every)
    heldout, _ = thin(of_split(evaluations, HELDOUT_SPLIT), rule.every)
    climb, final = _climb(pool, rule)
    heldout_climb, _ = _climb(heldout, rule)
    reference = in_window(pool, rule.updates, rule.reference)
    hold = paired_change(reference, final, rule.confidence)
    found = RunVerdict(
        label=NOT_MEASURED,
        rule=rule,
        climb=climb,
        hold=hold,
        heldout=heldout_climb,
        final=window(final) if final else None,
        left_out=left_out,
    )
    missing = _missing(pool, final, reference, rule)
    if climb is None or not climb.difference.defined:
        return replace(found, reason=missing or "fewer than two tasks in common")
    return replace(found, label=_label(climb, hold, rule.margin), reason=missing)


def _missing(
    pool: Sequence[EvalRecord],
    final: Sequence[EvalRecord],
    reference: Sequence[EvalRecord],
    rule: VerdictRule,
) -> str:
    if not pool:
        return "no pool evaluation (run.pool_eval_every = 0, or a run before evaluations.jsonl)"
    if pool[0].step != 0:
        return "no pool evaluation of update 0 (the warm start)"
    if not final:
        return f"no pool evaluation in the final window ({rule.steps(rule.final)})"
    if not reference:
        return f"no pool evaluation in the reference window ({rule.steps(rule.reference)})"
    return ""
