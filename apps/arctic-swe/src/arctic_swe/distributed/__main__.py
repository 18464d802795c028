"""``python -m arctic_swe.distributed``: one trainer rank (run it under ``torchrun``)."""

from arctic_swe.cli._train_worker import main

raise SystemExit(main())
