"""Wall-clock durations in tool output, masked so that no timing reaches a rollout's tokens.

A rollout's tokens are the policy's turns and the observations of its tool calls. The policy's
turns are seeded; the observations are not when a tool prints how long it took, and the one
every task runs does: pytest's summary line (``7 passed in 0.02s``). Measured on the embedded
deck: two warm starts from the same deck and seed had 44 of 200 expert trajectories with
different tokens, every difference a pytest duration, so the two warm starts (and every run
trained from them) differed. :func:`mask_durations` drops the duration from pytest's summary
lines and leaves everything else as the tool printed it.
"""

from __future__ import annotations

import re

#: Counted outcomes pytest reports in its summary line ("1 failed, 6 passed, 2 warnings").
_OUTCOMES = r"(?:passed|failed|errors?|skipped|xfailed|xpassed|warnings?|deselected|rerun)"
_COUNTS = rf"(?:no tests ran|\d+ {_OUTCOMES}(?:, \d+ {_OUTCOMES})*)"

#: One summary line: optional ``=`` rules around it (pytest without ``-q``), the counts, then
#: `` in 0.02s`` and, past a minute, `` (0:01:15)``.
_SUMMARY = re.compile(
    rf"^(?P<lead>=+ )?(?P<counts>{_COUNTS}) in \d+(?:\.\d+)?s(?: \(\d+:\d\d:\d\d(?:\.\d+)?\))?"
    rf"(?P<trail> =+)?$",
    re.MULTILINE,
)


def mask_durations(text: str) -> str:
    """``text`` with the duration removed from every pytest summary line: ``7 passed in
    0.02s`` becomes ``7 passed``, ``== 1 failed, 6 passed in 75.10s (0:01:15) ==`` becomes
    ``== 1 failed, 6 passed ==``. Other lines are returned unchanged; masking is idempotent."""
    return _SUMMARY.sub(_without_duration, text)


def _without_duration(match: re.Match[str]) -> str:
    return f"{match['lead'] or ''}{match['counts']}{match['trail'] or ''}"
