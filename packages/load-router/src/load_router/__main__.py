"""``python -m load_router`` — see :mod:`load_router._cli`."""

import sys

from load_router._cli import main

sys.exit(main())
