"""Every ``vllm serve`` command line the launcher writes parses with vLLM 0.33's own CLI parser
(Arctic-SWE §3.3): the parser ``vllm serve`` builds (its ``serve`` subcommand, the engine
arguments of ``make_arg_parser``), then the subcommand's own validation and the engine
arguments it becomes. Needs the ``arctic-swe[vllm]`` environment; skips elsewhere."""

from __future__ import annotations

import argparse
import itertools
import json
import shlex
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm")

from arctic_swe._cli import main
from arctic_swe.serve import VllmServeSpec, vllm_command

B200 = Path(__file__).resolve().parents[2] / "apps" / "arctic-swe" / "configs" / "b200.toml"
_VLLM_MODULE = "vllm.entrypoints.cli.main"


def _serve_parser() -> argparse.ArgumentParser:
    """The parser of ``vllm serve``, built as vLLM's CLI entry point builds it."""
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser(description="vLLM CLI")
    subparsers = parser.add_subparsers(required=False, dest="subparser")
    ServeSubcommand().subparser_init(subparsers)
    return parser


@pytest.fixture(autouse=True)
def _cpu_platform(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a GPU, vLLM's CLI entry point falls back to its CPU platform before it builds
    the engine arguments; do the same (undone after each test)."""
    from vllm import platforms

    if platforms.current_platform.is_unspecified():
        from vllm.platforms.cpu import CpuPlatform

        monkeypatch.setattr(platforms, "current_platform", CpuPlatform())


def _parse(argv: list[str]) -> argparse.Namespace:
    """``argv`` (``serve MODEL --flag …``) through vLLM's parser, validation and engine args."""
    import vllm
    from vllm.entrypoints.cli.serve import ServeSubcommand

    args = _serve_parser().parse_args(argv)
    assert args.subparser == "serve"
    ServeSubcommand().validate(args)
    vllm.AsyncEngineArgs.from_cli_args(args)  # every engine field accepts its value
    return args


def _vllm_argv(words: list[str]) -> list[str]:
    """The ``serve …`` part of a resolved command: ``ENV/bin/vllm serve …`` or
    ``ENV/bin/python -m vllm.entrypoints.cli.main serve …``; environment variables dropped."""
    while "=" in words[0] and not words[0].startswith("-"):
        words = words[1:]
    if words[1:3] == ["-m", _VLLM_MODULE]:
        return words[3:]
    assert Path(words[0]).name == "vllm", words
    return words[1:]


def _b200_engine_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> list[list[str]]:
    run_dir = tmp_path / "run"
    assert main(["cluster", "up", str(B200), "--run-dir", str(run_dir), "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # each command follows its "# <process name>" line
    engines = [after for name, after in itertools.pairwise(lines) if name.startswith("# engine-")]
    return [_vllm_argv(shlex.split(line)) for line in engines]


def test_every_b200_engine_command_parses_with_vllms_own_parser(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the preset's environments are relative to the current dir
    engines = _b200_engine_lines(tmp_path, capsys)
    assert len(engines) == 6
    for index, argv in enumerate(engines):
        args = _parse(argv)
        assert args.model_tag == "MODEL_DIR"
        assert (args.host, args.port) == ("127.0.0.1", 8000 + index)
        assert args.served_model_name == ["arctic-swe"]
        assert args.dtype == "bfloat16"
        assert args.max_num_seqs == 64
        assert args.max_model_len == 131072
        assert args.gpu_memory_utilization == pytest.approx(0.85)
        assert args.mamba_ssm_cache_dtype == "float32"
        assert args.logprobs_mode == "raw_logprobs"
        assert args.enable_prefix_caching is True
        assert args.generation_config == "vllm"  # neutral sampling defaults
        assert _backend(args.weight_transfer_config) == "nccl"


@pytest.mark.parametrize(
    "spec",
    [
        VllmServeSpec(model="/ckpt with space", port=9000, mamba_ssm_cache_dtype="bfloat16"),
        VllmServeSpec(model="/ckpt", max_model_len=4096, seed=7, served_model_name="policy"),
    ],
)
def test_the_serve_commands_variants_parse(spec: VllmServeSpec) -> None:
    args = _parse(vllm_command(spec)[1:])  # drop the program name
    assert args.model_tag == spec.model
    assert args.mamba_ssm_cache_dtype == spec.mamba_ssm_cache_dtype
    assert args.max_model_len == spec.max_model_len
    assert args.seed == spec.seed
    assert args.served_model_name == [spec.served_model_name]
    assert args.generation_config == "vllm"


def test_an_unknown_flag_is_refused_by_the_same_parser() -> None:
    # the parser is strict: a misspelt flag in vllm_command would fail the tests above
    with pytest.raises(SystemExit):
        _serve_parser().parse_args(["serve", "/ckpt", "--generation-configs", "vllm"])


def _backend(value: Any) -> str:
    if isinstance(value, str):
        return str(json.loads(value)["backend"])
    if isinstance(value, dict):
        return str(value["backend"])
    return str(value.backend)
