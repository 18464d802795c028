"""``arctic-swe cluster loop``: the orchestrator loop as the cluster's last child process.

It is ``arctic-swe overfit``'s loop (:func:`arctic_swe.orchestrator.run_training`) on the
configuration the launcher wrote (``RUN/cluster/loop.toml``: HTTP engines at their URLs, the
remote trainer at rank 0's URL), with the sandbox backend the topology names. Running it as a
child, not in the launcher, keeps the launcher a pure supervisor: every process — the loop
included — is watched, logged and stopped the same way, and a crash of the loop cannot take the
supervision down with it.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from arctic_swe._backends import sandbox_backend


def run_loop(
    run_dir: Path,
    config_path: Path,
    deck: Path,
    policy: Path,
    sandbox: str,
    console: Console,
    *,
    resume: bool = False,
) -> int:
    """Build or reuse the deck, then run the loop to ``run.updates``; 0 when it completes.
    ``resume`` continues from the run's last checkpoint (with the new servers' URLs)."""
    import torch

    from arctic_swe._execute import user_errors
    from arctic_swe.chat import ChatError
    from arctic_swe.config import RunConfigError, RunDirError, load_toml, prepare_run_dir
    from arctic_swe.deck import StoredDeckError
    from arctic_swe.metrics import MetricsError
    from arctic_swe.model import PolicyError
    from arctic_swe.orchestrator import Inputs, SetupError, ensure_deck, run_training
    from arctic_swe.trainer import TrainerError

    errors = (
        ChatError, StoredDeckError, MetricsError, PolicyError, RunConfigError, RunDirError,
        SetupError, TrainerError,
    )  # fmt: skip
    with user_errors(*errors):  # one `error:` line in loop.log, which the launcher quotes
        config = load_toml(config_path)
        run = prepare_run_dir(run_dir, config, resume=resume)
        torch.set_num_threads(1)  # the loop tokenises and schedules; ranks and engines compute
        deck_dir = ensure_deck(deck, config, console)
        result = run_training(
            config,
            run,
            Inputs(deck_dir, policy),
            resume=resume,
            console=console,
            backend=sandbox_backend(sandbox),
        )
    console.print(f"loop finished: {len(result.records)} updates in {run.metrics}")
    return 0
