"""The two harness ablations of the paper's gating study (Arctic-SWE §3.2).

* **Lenient format** (``strict_format=False``): a turn swe-formatcheck rejects is still executed
  when a forgiving parser of the kind public stacks use can pull a call out of it — non-greedy
  regexes, an unclosed ``<tool_call>`` accepted, a value ending at the next tag or at the end of
  the text, the last duplicate parameter winning, text around the call ignored. The strict
  verdict's codes are still recorded, so the metrics count the malformed turns that ran.
* **Ungated reward** (``gated_reward=False``): swe-formatcheck's ``EpisodeGate(gated=False)`` —
  nothing but a submit or an exhausted budget ends the episode; an invalid turn gets the error
  observation of :func:`feedback_text` and the episode goes on, a repeated call simply runs
  again — and the reward is the grade of whatever the repository holds when the episode ends,
  submitted or not.

Both exist to reproduce the failure modes the recipe guards against; neither is a default.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from swe_formatcheck import ToolCall, ToolSpec, TurnVerdict

_ENVELOPE = re.compile(r"<tool_call>(.*?)</tool_call>|<tool_call>(.*)$", re.DOTALL)
_FUNCTION = re.compile(r"<function=([^>\n]*)>")
_PARAMETER = re.compile(
    r"<parameter=([^>\n]*)>(.*?)(?=</parameter>|<parameter=|</function>|</tool_call>|$)",
    re.DOTALL,
)


def lenient_call(raw: str, tools: Iterable[ToolSpec]) -> ToolCall | None:
    """The first call a forgiving regex parser finds in ``raw`` (or ``None``).

    The function name must be a known tool and every required parameter present (a public
    parser would otherwise fail at dispatch); unknown parameters are dropped, one newline is
    stripped on each side of a value, and a later duplicate parameter overwrites an earlier one.
    """
    by_name = {spec.name: spec for spec in tools}
    bodies = [closed or unclosed for closed, unclosed in _ENVELOPE.findall(raw)]
    if not bodies:
        bodies = [raw]  # a bare <function=...> with no envelope is still parsed
    for body in bodies:
        function = _FUNCTION.search(body)
        if function is None:
            continue
        name = function.group(1).strip()
        spec = by_name.get(name)
        if spec is None:
            continue
        arguments: dict[str, str] = {}
        for key, value in _PARAMETER.findall(body[function.end() :]):
            key = key.strip()
            if key in spec.parameters:
                arguments[key] = _strip_newline(value)
        if all(key in arguments for key in spec.required):
            return ToolCall(name, arguments)
    return None


def _strip_newline(value: str) -> str:
    if value.startswith("\n"):
        value = value[1:]
    if value.endswith("\n"):
        value = value[:-1]
    return value


def lenient_verdict(strict: TurnVerdict, raw: str, tools: Iterable[ToolSpec]) -> TurnVerdict:
    """What a lenient stack acts on: ``strict`` when it is ok or nothing can be pulled out of
    ``raw``; otherwise a clean verdict carrying the repaired call (the caller keeps ``strict``'s
    codes to count the malformed turns that ran)."""
    if strict.ok:
        return strict
    call = lenient_call(raw, tools)
    return strict if call is None else TurnVerdict((), call, strict.reasoning)


def feedback_text(verdict: TurnVerdict) -> str:
    """The error observation an ungated harness shows after a turn it could not run."""
    details = "; ".join(f"{v.code}: {v.detail}" for v in verdict.violations) or "no tool call"
    return f"Error: your last turn was not a valid tool call ({details}). Try again."
