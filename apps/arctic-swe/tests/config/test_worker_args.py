"""Tests for ``arctic_swe.config._worker_args``: the trainer rank's options and the cheap checks
both ``arctic-swe train-worker`` and ``python -m arctic_swe.distributed`` run before torch."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from arctic_swe._execute import CommandError
from arctic_swe.config import RunConfig, add_worker_options, preset, to_toml, worker_inputs


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_worker_options(parser)
    return parser.parse_args(list(argv))


def _policy(tmp_path: Path) -> Path:
    policy = tmp_path / "policy"
    policy.mkdir()
    (policy / "config.json").write_text("{}")
    return policy


def test_options_parse_with_their_defaults() -> None:
    args = _args("--policy", "p", "--run-dir", "r")
    assert (args.host, args.port, args.resume, args.threads) == ("127.0.0.1", 0, False, None)
    assert args.collective_timeout == 600


def test_a_directory_without_config_json_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="is not a checkpoint directory"):
        worker_inputs(_args("--policy", str(tmp_path), "--run-dir", "r"))


def test_no_config_means_the_defaults_and_a_file_is_read(tmp_path: Path) -> None:
    policy = _policy(tmp_path)
    assert worker_inputs(_args("--policy", str(policy), "--run-dir", "r")) == (policy, RunConfig())
    toml = tmp_path / "run.toml"
    toml.write_text(to_toml(preset("long")))
    _, config = worker_inputs(
        _args("--policy", str(policy), "--config", str(toml), "--run-dir", "r")
    )
    assert config == preset("long") != RunConfig()


def test_a_bad_config_is_a_usage_error(tmp_path: Path) -> None:
    toml = tmp_path / "run.toml"
    toml.write_text("[trainer]\nno_such_field = 1\n")
    with pytest.raises(CommandError):
        worker_inputs(
            _args("--policy", str(_policy(tmp_path)), "--config", str(toml), "--run-dir", "r")
        )
