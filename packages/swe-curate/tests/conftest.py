"""Test wiring for swe-curate: makes the shared helper modules in this folder importable."""

from __future__ import annotations

import sys
from pathlib import Path

# --import-mode=importlib keeps test folders off sys.path; the helpers have package-unique names
# (``curate_*``) so adding this folder cannot shadow another member's modules.
sys.path.insert(0, str(Path(__file__).parent))
