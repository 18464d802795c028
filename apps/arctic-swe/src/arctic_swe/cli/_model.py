"""``arctic-swe model init`` / ``model check``: write or check a local Qwen3.5 checkpoint."""

from __future__ import annotations

import argparse
from pathlib import Path

from arctic_swe._argtypes import Subparsers, non_negative_int
from arctic_swe._execute import CommandError, user_errors
from arctic_swe.cli._checks import require_checkpoint, require_free_target
from arctic_swe.cli._output import console

#: Kept in step with ``arctic_swe.model.PRESETS`` / ``arctic_swe.chat.TEMPLATES`` (tested); named
#: here so ``--help`` imports nothing heavy.
PRESET_NAMES = ("tiny",)
TEMPLATE_NAMES = ("qwen3.5", "arctic")


def add_parser(subparsers: Subparsers) -> argparse.ArgumentParser:
    model = subparsers.add_parser(
        "model", help="local Hugging Face Qwen3.5 checkpoints: write a tiny one, check one"
    )
    actions = model.add_subparsers(dest="model_command", metavar="ACTION", required=True)
    init = actions.add_parser(
        "init",
        help="write a self-contained Qwen3.5 checkpoint directory (random weights, local tokenizer)",
        description="Write DIR/config.json, model.safetensors, generation_config.json, "
        "tokenizer.json and tokenizer_config.json (with the chat template): seeded random "
        "weights of a preset, a byte-level BPE tokenizer trained locally with Qwen3.5's special "
        "tokens, and a chat template. Nothing is downloaded.",
    )
    init.add_argument("dir", metavar="DIR", help="checkpoint directory to write")
    init.add_argument(
        "--preset",
        choices=PRESET_NAMES,
        default="tiny",
        help="model shape: tiny = 4 layers (3 Gated DeltaNet + 1 gated attention), hidden 128 "
        "(default: %(default)s)",
    )
    init.add_argument(
        "--seed",
        type=non_negative_int,
        default=0,
        help="seed of the weights and the tokenizer corpus (default: %(default)s)",
    )
    init.add_argument(
        "--template",
        choices=TEMPLATE_NAMES,
        default="qwen3.5",
        help="chat template: qwen3.5 = the Qwen3.5 format (tools as JSON in the system block, "
        "qwen3_coder XML calls, generation prompt opens <think>); arctic = the app's own "
        "(default: %(default)s)",
    )
    init.add_argument(
        "--force", action="store_true", help="replace DIR if it exists and is not empty"
    )
    check = actions.add_parser(
        "check",
        help="check that DIR is a usable Qwen3.5 policy checkpoint and show its chat format",
        description="Load DIR's weights, tokenizer and chat template as the harness would and "
        "print what was found (model type, parameters, vocabulary, tool-call dialect, "
        "reasoning prefill); a one-line error names whatever is missing.",
    )
    check.add_argument("dir", metavar="DIR", help="checkpoint directory to check")
    return model


def run(args: argparse.Namespace) -> int:
    if args.model_command == "init":
        return _init(args)
    return _check(Path(args.dir))


def _init(args: argparse.Namespace) -> int:
    require_free_target(args.dir, force=args.force)  # before torch and transformers load
    from arctic_swe.chat import ChatError
    from arctic_swe.model import PolicyError, init_checkpoint

    with (
        console(stderr=True).status(f"writing {args.dir} ..."),
        user_errors(PolicyError, ChatError, OSError),
    ):
        path = init_checkpoint(
            args.dir, preset=args.preset, seed=args.seed, template=args.template, force=args.force
        )
    console().print(
        f"checkpoint written to {path} (preset {args.preset}, seed {args.seed}, "
        f"template {args.template})"
    )
    return 0


def _check(directory: Path) -> int:
    require_checkpoint(directory)  # the layout, before torch and transformers load
    from rich.table import Table

    from arctic_swe.chat import ChatError, chat_format, load_tokenizer
    from arctic_swe.harness import TOOLS
    from arctic_swe.model import PolicyError, check_checkpoint, load_policy

    with user_errors(PolicyError, ChatError):
        check_checkpoint(directory)
        tokenizer = load_tokenizer(directory)
        fmt = chat_format(tokenizer, TOOLS)
        model = load_policy(directory, patch_numerics=False)
    if len(tokenizer) > model.config.vocab_size:
        raise CommandError(
            f"{directory}: the tokenizer has {len(tokenizer)} tokens, the model's embedding "
            f"only {model.config.vocab_size}"
        )
    table = Table(title=f"checkpoint {directory}")
    table.add_column("property")
    table.add_column("value")
    rows = {
        "model": f"{type(model).__name__} ({model.config.num_hidden_layers} layers)",
        "parameters": f"{sum(p.numel() for p in model.parameters()):,}",
        "vocabulary": f"{len(tokenizer)} (model {model.config.vocab_size})",
        "tool-call dialect": fmt.dialect,
        "generation prompt opens <think>": "yes" if fmt.think_prefilled else "no",
        "end of turn": fmt.end_token,
    }
    for key, value in rows.items():
        table.add_row(key, value)
    console().print(table)
    return 0
