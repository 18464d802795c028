"""``ServeArgs``: the one ``arctic-swe serve`` command line of the fleet and the cluster."""

from __future__ import annotations

from pathlib import Path

from arctic_swe.serve import ServeArgs
from arctic_swe.serve._command import add_parser


def test_flags_left_as_none_are_left_out() -> None:
    argv = ServeArgs(Path("/m"), 4, 2, "engine-0").argv()
    assert argv == (
        "serve", "--model", "/m", "--host", "127.0.0.1", "--port", "0",
        "--capacity", "4", "--threads", "2", "--engine-id", "engine-0",
    )  # fmt: skip


def test_every_flag_parses_back_to_its_value() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command"))
    serve = ServeArgs(
        "/m", 6, 3, "e-2", host="0.0.0.0", port=8001, served_model_name="x", max_model_len=512,
        state_dtype="bfloat16",
    )  # fmt: skip
    args = parser.parse_args(list(serve.argv()))
    assert args.command == "serve"
    parsed = (args.model, args.capacity, args.threads, args.engine_id, args.host, args.port)
    assert parsed == ("/m", 6, 3, "e-2", "0.0.0.0", 8001)
    assert (args.served_model_name, args.max_model_len) == ("x", 512)
    assert args.mamba_ssm_cache_dtype == "bfloat16"
