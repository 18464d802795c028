"""Unified-diff inspection: which files a patch touches, which lines it adds."""

from __future__ import annotations

import re

_DIFF_GIT = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.MULTILINE)
_PLUS_FILE = re.compile(r"^\+\+\+ b/(\S+)$", re.MULTILINE)


def files_in_patch(patch: str) -> tuple[str, ...]:
    """Return the post-image paths a unified diff touches, in order, without duplicates.

    >>> files_in_patch("diff --git a/t.py b/t.py\\n--- a/t.py\\n+++ b/t.py\\n@@ -1 +1 @@\\n-a\\n+b\\n")
    ('t.py',)
    """
    found = [m.group(2) for m in _DIFF_GIT.finditer(patch)]
    found += [m.group(1) for m in _PLUS_FILE.finditer(patch)]
    return tuple(dict.fromkeys(p for p in found if p != "/dev/null"))


def added_lines(patch: str, *, min_length: int = 1) -> tuple[str, ...]:
    """The stripped content of every ``+`` line (not ``+++``) at least `min_length` long."""
    lines = []
    for line in patch.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            text = line[1:].strip()
            if len(text) >= min_length:
                lines.append(text)
    return tuple(lines)
