"""The two harness ablations of the paper's gating study (Arctic-SWE §3.2).

* **Lenient format** (``strict_format=False``): a turn swe-formatcheck rejects is still executed
  when a forgiving parser of the kind public stacks use can pull a call out of it — the run's
  own dialect's lenient reading (`swe_formatcheck.parse_lenient`): an unclosed ``<tool_call>``
  accepted, text around the call ignored, the last duplicate parameter (or JSON key) winning,
  for qwen3_coder a value ending at the next tag or at the end of the text. The strict
  verdict's codes are still recorded, so the metrics count the malformed turns that ran.
* **Ungated reward** (``gated_reward=False``): swe-formatcheck's ``EpisodeGate(gated=False)`` —
  nothing but a submit or an exhausted budget ends the episode; an invalid turn gets the error
  observation of :func:`feedback_text` and the episode goes on, a repeated call simply runs
  again — and the reward is the grade of whatever the repository holds when the episode ends,
  submitted or not.

Both exist to reproduce the failure modes the recipe guards against; neither is a default.
"""

from __future__ import annotations

from collections.abc import Iterable

from swe_formatcheck import ToolSpec, TurnVerdict, parse_lenient


def lenient_verdict(
    strict: TurnVerdict, raw: str, tools: Iterable[ToolSpec], dialect: str
) -> TurnVerdict:
    """What a lenient stack acts on: ``strict`` when it is ok or the forgiving parser of
    ``dialect`` (the one the turn was checked in) pulls nothing out of ``raw``; otherwise a
    clean verdict carrying the repaired call (the caller keeps ``strict``'s codes to count the
    malformed turns that ran)."""
    if strict.ok:
        return strict
    call = parse_lenient(raw, tools=tools, dialect=dialect)
    return strict if call is None else TurnVerdict((), call, strict.reasoning)


def feedback_text(verdict: TurnVerdict) -> str:
    """The error observation an ungated harness shows after a turn it could not run."""
    details = "; ".join(f"{v.code}: {v.detail}" for v in verdict.violations) or "no tool call"
    return f"Error: your last turn was not a valid tool call ({details}). Try again."
