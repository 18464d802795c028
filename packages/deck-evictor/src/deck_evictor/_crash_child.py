"""Entry point of the writer process of :func:`deck_evictor.testing.check_crash_safety`.

``python -m deck_evictor._crash_child TARGET PATH FIRST_STEP`` — runs until killed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from deck_evictor._kit_crash import run_writer

if __name__ == "__main__":
    run_writer(sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]))
