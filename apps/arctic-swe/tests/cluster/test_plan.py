"""The exact command lines of both presets (``cluster up --dry-run``), each resolved to its
role's environment, and the multi-node plan."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import attrs
import pytest

from arctic_swe._cli import main
from arctic_swe.cluster import load_cluster, plan_cluster
from arctic_swe.cluster._envs import MODULES
from arctic_swe.cluster._plan import resolve_argv

from .conftest import write_topology

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
_SCRIPTS = {module: name for name, module in MODULES.items()}


def _dry_run(config: str, run_dir: Path, capsys: pytest.CaptureFixture[str]) -> list[list[str]]:
    assert (
        main(["cluster", "up", str(CONFIGS / config), "--run-dir", str(run_dir), "--dry-run"]) == 0
    )
    lines = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("#")]
    assert not run_dir.exists()  # a dry run starts and writes nothing
    return [shlex.split(line) for line in lines]


def _env(words: list[str]) -> tuple[dict[str, str], list[str]]:
    env = {}
    while "=" in words[0] and not words[0].startswith("-"):
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    return env, words


def _program(argv: list[str]) -> tuple[str, list[str]]:
    """``(interpreter or bin dir, argv with the console-script name)`` of a resolved command:
    ``ENV/bin/vllm serve …`` and ``ENV/bin/python -m vllm.entrypoints.cli.main serve …`` both
    give ``("ENV/bin", ["vllm", "serve", …])``."""
    if len(argv) > 2 and argv[1] == "-m" and argv[2] in _SCRIPTS:
        return str(Path(argv[0]).parent), [_SCRIPTS[argv[2]], *argv[3:]]
    return str(Path(argv[0]).parent), [Path(argv[0]).name, *argv[1:]]


def _flags(argv: list[str]) -> dict[str, str]:
    return {a: b for a, b in zip(argv, [*argv[1:], ""], strict=True) if a.startswith("--")}


def test_b200_dry_run_is_six_vllm_engines_a_two_gpu_trainer_and_the_loop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the preset's environments are relative to the current dir
    lines = _dry_run("b200.toml", tmp_path / "run", capsys)
    assert len(lines) == 8
    for index, words in enumerate(lines[:6]):
        env, words = _env(words)
        assert env == {"CUDA_VISIBLE_DEVICES": str(2 + index), "VLLM_SERVER_DEV_MODE": "1"}
        assert words[0] == str(tmp_path / ".venv-vllm" / "bin" / "python")  # not there: -m
        where, argv = _program(words)
        assert where == str(tmp_path / ".venv-vllm" / "bin")
        assert argv[:3] == ["vllm", "serve", "MODEL_DIR"]
        flags = _flags(argv)
        assert flags["--port"] == str(8000 + index)
        assert flags["--max-num-seqs"] == "64"
        assert flags["--mamba-ssm-cache-dtype"] == "float32"
        assert flags["--logprobs-mode"] == "raw_logprobs"
        assert flags["--generation-config"] == "vllm"
        assert flags["--served-model-name"] == "arctic-swe"
    env, words = _env(lines[6])
    assert env == {"CUDA_VISIBLE_DEVICES": "0,1", "OMP_NUM_THREADS": "8"}
    where, argv = _program(words)
    assert where == str(tmp_path / ".venv" / "bin")
    assert argv[:6] == [
        "torchrun",
        "--standalone",
        "--nproc-per-node",
        "2",
        "-m",
        "arctic_swe.distributed",
    ]
    assert _flags(argv)["--config"] == str(tmp_path / "run" / "cluster" / "trainer.toml")
    env, words = _env(lines[7])
    where, argv = _program(words)
    assert where == str(Path(sys.executable).parent)  # the loop: the launcher's environment
    assert argv[:3] == ["arctic-swe", "cluster", "loop"]
    assert _flags(argv)["--sandbox"] == "docker"


def test_cpu_dry_run_is_two_serve_engines_a_gloo_trainer_and_the_loop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _dry_run("cpu-cluster.toml", tmp_path / "run", capsys)
    assert len(lines) == 4
    here = str(Path(sys.executable).parent)
    for index, words in enumerate(lines[:2]):
        env, words = _env(words)
        assert env == {}
        where, argv = _program(words)
        assert where == here  # no [engines] python: the launcher's environment
        assert argv[:2] == ["arctic-swe", "serve"]
        flags = _flags(argv)
        assert flags["--model"] == "runs/tiny-qwen35"
        assert (flags["--host"], flags["--port"]) == ("127.0.0.1", "0")
        assert flags["--engine-id"] == f"engine-{index}"
    env, words = _env(lines[2])
    assert env == {"CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1"}  # CPU ranks see no GPU
    where, argv = _program(words)
    assert where == here
    assert argv[:4] == ["torchrun", "--standalone", "--nproc-per-node", "2"]
    assert _flags(argv)["--policy"] == "runs/tiny-qwen35"
    _, words = _env(lines[3])
    assert _flags(_program(words)[1])["--sandbox"] == "namespace"


def test_a_multi_node_trainer_uses_the_rendezvous_and_other_nodes_start_only_ranks(
    tmp_path: Path,
) -> None:
    config = load_cluster(CONFIGS / "b200.toml")
    trainer = attrs.evolve(config.trainer, nnodes=2, rdzv_endpoint="head:29400")
    config = attrs.evolve(config, trainer=trainer)
    head = plan_cluster(config, tmp_path, "/ckpt")
    assert head.trainer is not None
    argv = list(head.trainer.argv)
    assert "--standalone" not in argv
    assert _flags(argv)["--rdzv-endpoint"] == "head:29400"
    assert (_flags(argv)["--nnodes"], _flags(argv)["--node-rank"]) == ("2", "0")
    assert len(head.engines) == 6
    assert head.loop is not None
    worker = plan_cluster(
        attrs.evolve(config, trainer=attrs.evolve(trainer, node_rank=1)), tmp_path, "/ckpt"
    )
    assert worker.engines == ()
    assert worker.loop is None
    assert worker.trainer is not None
    assert _flags(list(worker.trainer.argv))["--node-rank"] == "1"


def test_engines_given_by_url_are_not_started(tmp_path: Path) -> None:
    config = load_cluster(CONFIGS / "cpu-cluster.toml")
    engines = attrs.evolve(config.engines, count=0, urls=("http://a:1", "http://b:2"))
    plan = plan_cluster(attrs.evolve(config, engines=engines), tmp_path, "m")
    assert plan.engines == ()
    assert [p.name for p in plan.processes] == ["trainer", "loop"]


def test_console_scripts_resolve_to_this_environment() -> None:
    import sys

    resolved = resolve_argv(("arctic-swe", "serve"))
    assert resolved[-1] == "serve"
    assert Path(resolved[0]).parent == Path(sys.executable).parent


def test_the_launcher_never_imports_torch(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from arctic_swe._cli import main\n"
        f"main(['cluster', 'up', {str(CONFIGS / 'b200.toml')!r}, '--run-dir', "
        f"{str(tmp_path / 'r')!r}, '--dry-run'])\n"
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"


def test_resume_restarts_the_trainer_and_the_loop_from_their_checkpoints(tmp_path: Path) -> None:
    config = load_cluster(CONFIGS / "cpu-cluster.toml")
    plan = plan_cluster(config, tmp_path, "m", resume=True)
    assert plan.trainer is not None
    assert plan.loop is not None
    assert "--resume" in plan.trainer.argv
    assert "--resume" in plan.loop.argv
    assert all("--resume" not in engine.argv for engine in plan.engines)  # servers start afresh
    fresh = plan_cluster(config, tmp_path, "m")
    assert all("--resume" not in p.argv for p in fresh.processes)


def _env_dir(root: Path, *scripts: str) -> Path:
    (root / "bin").mkdir(parents=True)
    for name in ("python", *scripts):
        (root / "bin" / name).write_text("")
    return root / "bin" / "python"


def test_each_role_runs_from_its_interpreters_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    engines_python = _env_dir(tmp_path / "serve-env", "arctic-swe")
    trainer_python = _env_dir(tmp_path / "train-env")  # no torchrun script: python -m
    config = write_topology(
        tmp_path,
        "ckpt",
        engines=f'count = 1\npython = "{engines_python}"',
        trainer=f'ranks = 1\npython = "{trainer_python}"',
    )
    assert main(["cluster", "up", str(config), "--run-dir", str(tmp_path / "r"), "--dry-run"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("#")]
    engine, trainer, loop = (_env(shlex.split(line))[1] for line in lines)
    assert engine[:2] == [str(tmp_path / "serve-env" / "bin" / "arctic-swe"), "serve"]
    assert trainer[:3] == [str(trainer_python), "-m", "torch.distributed.run"]
    assert "arctic_swe.distributed" in trainer
    assert _program(loop)[0] == str(Path(sys.executable).parent)


def test_the_plan_records_each_roles_interpreter(tmp_path: Path) -> None:
    config = load_cluster(CONFIGS / "cpu-cluster.toml")
    python = str(_env_dir(tmp_path / "env"))
    config = attrs.evolve(
        config,
        engines=attrs.evolve(config.engines, python=python),
        trainer=attrs.evolve(config.trainer, python=python),
    )
    plan = plan_cluster(config, tmp_path, "m")
    assert [p.python for p in plan.processes] == [python, python, python, ""]
    assert all(p.argv[:3] == (python, "-m", "arctic_swe._cli") for p in plan.engines)
