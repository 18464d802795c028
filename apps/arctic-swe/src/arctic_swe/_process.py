"""Helpers for the child processes the app starts (engine servers, the cluster's processes).

Standard library only: the launcher (``arctic-swe cluster``) uses them without loading torch.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import signal

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:  # pragma: no cover - runs in the forked child
    """``preexec_fn`` of a child: the kernel sends it SIGTERM when the thread that forked it
    dies (Linux ``PR_SET_PDEATHSIG``; a no-op where there is no such call)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def ready_url(line: bytes) -> str | None:
    """The ``url`` of a ready line (one JSON object with an http ``url``: what
    ``arctic-swe serve`` and the distributed trainer print when listening), else ``None``."""
    try:
        data = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    url = data.get("url") if isinstance(data, dict) else None
    return url if isinstance(url, str) and url.startswith("http") else None
