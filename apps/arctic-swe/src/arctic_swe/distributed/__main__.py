"""``python -m arctic_swe.distributed``: one trainer rank (run it under ``torchrun``)."""

from arctic_swe.distributed._main import main

raise SystemExit(main())
