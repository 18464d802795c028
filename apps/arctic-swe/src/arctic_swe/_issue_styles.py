"""How an embedded deck's issues are written (``deck.issue_style``, ``deck build --issue-style``).

* ``line`` — the issue names the file and the function, one failing call, the wrong line and the
  right one: the fix is a copy, so a tiny policy can learn it (the stress test's default);
* ``behaviour`` — the issue names the file and the function and states what the function does
  on concrete inputs (actual vs expected, computed by running the buggy and the fixed code) and
  the failing test, never the line or the fix: solving it takes inferring the edit, so a policy
  that memorised the pool's fixes is told apart from one that learned the skill (Arctic-SWE §3.1).

Kept at the package root because both ``config`` and ``deck`` name the choices, and ``config``
must not import the deck (it pulls the sandbox in).
"""

from __future__ import annotations

LINE_STYLE = "line"
BEHAVIOUR_STYLE = "behaviour"
ISSUE_STYLES: tuple[str, ...] = (LINE_STYLE, BEHAVIOUR_STYLE)
