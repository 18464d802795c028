"""Make the shared turn builders (`formatcheck_turns`) importable under ``--import-mode=importlib``.

The module name carries the package name so it cannot clash with another member's helpers when
the whole workspace is collected in one run.
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
