"""The warm start with a live ``rich`` display (``arctic-swe warmstart`` and ``overfit``)."""

from __future__ import annotations

import os
from collections.abc import Sequence

from rich.console import Console
from transformers import PreTrainedTokenizerFast

from arctic_swe._progress import stage_progress
from arctic_swe.deck import DeckTask
from arctic_swe.warmstart._induction import InductionConfig
from arctic_swe.warmstart._pipeline import WarmStartResult, warm_start
from arctic_swe.warmstart._resume import staging_dir
from arctic_swe.warmstart._sft import SFTConfig
from swe_sandbox import Backend


def warm_start_live(
    tasks: Sequence[DeckTask],
    tokenizer: PreTrainedTokenizerFast,
    out_dir: str | os.PathLike[str],
    backend: Backend,
    console: Console,
    *,
    sft: SFTConfig,
    induction: InductionConfig,
    model_seed: int = 0,
    concurrency: int = 2,
) -> WarmStartResult:
    """:func:`warm_start` with one progress bar per stage (expert, copy, SFT) and a closing
    line naming what was written and how long each stage took."""
    if staging_dir(out_dir).is_dir():
        console.print(f"resuming the interrupted warm start kept in {staging_dir(out_dir)}")
    with stage_progress(console) as progress:
        expert_bar = progress.add_task("expert", total=len(tasks), info="")
        copy_bar = progress.add_task("copy", total=induction.steps, info="")
        sft_bar = progress.add_task("SFT", total=sft.steps, info="")
        result = warm_start(
            tasks,
            tokenizer,
            out_dir,
            backend,
            sft=sft,
            model_seed=model_seed,
            concurrency=concurrency,
            on_expert=lambda t: progress.update(expert_bar, advance=1, info=t.task_id),
            on_step=lambda s: progress.update(sft_bar, advance=1, info=f"loss {s.loss:.3f}"),
            induction=induction,
            on_induction=lambda s: progress.update(
                copy_bar, advance=1, info=f"loss {s.loss:.3f} acc {s.accuracy:.2f}"
            ),
        )
    copy_note = (
        f"{len(result.induction)} copy steps ({result.induction_seconds:.0f} s, final accuracy "
        f"{result.induction[-1].accuracy:.2f}), "
        if result.induction
        else ""
    )
    console.print(
        f"policy written to {result.policy_dir}: {len(result.expert)} expert trajectories "
        f"({result.expert_seconds:.0f} s), {copy_note}{len(result.steps)} SFT steps "
        f"({result.sft_seconds:.0f} s), final loss {result.final_loss:.4f}"
    )
    return result
