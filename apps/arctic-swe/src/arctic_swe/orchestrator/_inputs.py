"""Build or reuse the stress test's inputs: the deck (+ tokenizer) and the warm-start policy.

Both are delegated to the app's builders (``arctic_swe.deck``, ``arctic_swe.warmstart``);
an existing directory is reused as is, so repeated runs (and ``compare`` ablations) share one
deck and one warm start.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console

from arctic_swe._issue_styles import LINE_STYLE
from arctic_swe.chat import DEFAULT_VOCAB_SIZE, load_tokenizer, save_tokenizer, train_tokenizer
from arctic_swe.config import (
    TOKENIZER_DIR,
    WARMSTART_STEPS,
    WARMSTART_TASKS,
    WARMSTART_WORKERS,
    RunConfig,
)
from arctic_swe.deck import DeckConfig, load_deck, write_deck
from arctic_swe.harness import TINY_HARNESS
from arctic_swe.orchestrator._setup import Inputs, SetupError
from swe_sandbox import create_backend


def ensure_deck(deck_dir: Path, config: RunConfig, console: Console) -> Path:
    """Reuse ``deck_dir`` if it holds a deck and its tokenizer, else generate one (pool of at
    least the config's size, issues in ``deck.issue_style``) and train its tokenizer. A reused
    deck keeps its own issue style; a note says so when it is not the config's."""
    # A deck counts once its tokenizer is saved too: an interrupted build is built again. An
    # imported deck (`arctic-swe deck import`) has no tokenizer (the policy's is used): reused.
    if (deck_dir / "deck.json").is_file() and (
        (deck_dir / TOKENIZER_DIR / "tokenizer.json").is_file() or _imported(deck_dir)
    ):
        style = _issue_style(deck_dir)
        if style is not None and style != config.deck.issue_style:
            console.print(
                f"note: the deck in {deck_dir} has {style}-style issues "
                f"(deck.issue_style {config.deck.issue_style!r} applies only to a deck built here)"
            )
        return deck_dir
    from arctic_swe.warmstart import deck_corpus

    console.print(f"building the deck in {deck_dir} ...")
    deck_config = DeckConfig(
        pool_size=max(160, config.deck.pool_size), issue_style=config.deck.issue_style
    )
    deck = write_deck(deck_dir, deck_config)
    tokenizer = train_tokenizer(deck_corpus(deck, TINY_HARNESS), DEFAULT_VOCAB_SIZE)
    save_tokenizer(tokenizer, deck_dir / TOKENIZER_DIR)
    return deck_dir


def _manifest(deck_dir: Path) -> dict[str, Any] | None:
    try:
        manifest = json.loads((deck_dir / "deck.json").read_text())
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) else None


def _imported(deck_dir: Path) -> bool:
    manifest = _manifest(deck_dir)
    return manifest is not None and manifest.get("kind") == "imported"


def _issue_style(deck_dir: Path) -> str | None:
    """The issue style of the procedural deck in ``deck_dir`` (a manifest without one is
    line-style); ``None`` for an imported deck, whose issues are the dataset's, or an
    unreadable manifest (loading the deck reports that)."""
    manifest = _manifest(deck_dir)
    if manifest is None or manifest.get("kind") == "imported":
        return None
    config = manifest.get("config")
    return str(config.get("issue_style", LINE_STYLE)) if isinstance(config, dict) else None


def ensure_policy(policy_dir: Path, deck_dir: Path, config: RunConfig, console: Console) -> Path:
    """Reuse ``policy_dir`` if it holds a checkpoint, else run the warm start (scripted expert
    on the warm-start split + SFT) into it."""
    if (policy_dir / "config.json").is_file():
        return policy_dir
    from arctic_swe.warmstart import InductionConfig, SFTConfig, warm_start_live

    console.print(f"warm-starting the policy into {policy_dir} (expert, copy task, SFT) ...")
    deck = load_deck(deck_dir)
    tokenizer = load_tokenizer(deck_dir / TOKENIZER_DIR)
    tasks = deck.split("warmstart")[:WARMSTART_TASKS]
    if not tasks:
        raise SetupError(
            f"deck {deck_dir} has no warm-start split (an imported deck has none): pass "
            "--policy an existing checkpoint, e.g. one `arctic-swe warmstart` wrote"
        )
    warm_start_live(
        tasks,
        tokenizer,
        policy_dir,
        create_backend(config.sandbox.backend),
        console,
        sft=SFTConfig(steps=WARMSTART_STEPS, seed=config.run.seed),
        induction=InductionConfig(seed=config.run.seed),
        model_seed=config.run.seed,
        concurrency=WARMSTART_WORKERS,
    )
    return policy_dir


def random_init_inputs(
    root: Path,
    pool_size: int,
    *,
    deck_seed: int = 3,
    policy_seed: int = 0,
    vocab_size: int = 512,
) -> Inputs:
    """A deck of ``pool_size`` pool tasks (no held-out or warm-start split) with its tokenizer,
    and a **random-init** tiny policy saved with that tokenizer, under ``root`` (``deck/``,
    ``policy/``): the loop's machinery in seconds, for tests and benchmarks — not learning (the
    policy solves by luck only; ``ensure_policy`` builds the real warm start)."""
    from arctic_swe.model import policy_config, save_policy
    from arctic_swe.trainer import build_fp32_policy
    from arctic_swe.warmstart import deck_corpus

    deck = write_deck(
        root / "deck",
        DeckConfig(seed=deck_seed, pool_size=pool_size, heldout_size=0, warmstart_size=0),
    )
    tokenizer = train_tokenizer(deck_corpus(deck, TINY_HARNESS), vocab_size)
    save_tokenizer(tokenizer, root / "deck" / TOKENIZER_DIR)
    model = build_fp32_policy(
        policy_config(len(tokenizer), pad_token_id=tokenizer.pad_token_id), seed=policy_seed
    )
    policy = save_policy(model, root / "policy")
    save_tokenizer(tokenizer, policy)
    return Inputs(root / "deck", policy)
