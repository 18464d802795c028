"""Each role's command runs in its own environment: console scripts of that interpreter's
``bin/``, else ``<python> -m <module>``; the probe answers from real second environments."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from arctic_swe.cluster._envs import (
    DEV_SYNC,
    ENGINE,
    TRAINER,
    VLLM,
    VLLM_SYNC,
    fix_command,
    probe,
    resolve_argv,
)


def _fake_env(root: Path, *scripts: str) -> Path:
    """An environment layout: ``root/pyvenv.cfg`` and ``root/bin/{python, scripts}``."""
    (root / "bin").mkdir(parents=True)
    (root / "pyvenv.cfg").write_text("home = /usr/bin\n")
    for name in ("python", *scripts):
        (root / "bin" / name).write_text("#!/bin/sh\n")
    return root / "bin" / "python"


def test_a_script_of_the_roles_environment_is_used(tmp_path: Path) -> None:
    python = _fake_env(tmp_path / "env", "vllm", "torchrun")
    bin_dir = str(python.parent)
    assert resolve_argv(("vllm", "serve", "m"), str(python)) == [f"{bin_dir}/vllm", "serve", "m"]
    assert resolve_argv(("torchrun", "-m", "x"), str(python)) == [f"{bin_dir}/torchrun", "-m", "x"]


def test_without_the_script_the_module_runs_under_the_roles_interpreter(tmp_path: Path) -> None:
    python = str(_fake_env(tmp_path / "env"))
    assert resolve_argv(("vllm", "serve"), python) == [
        python, "-m", "vllm.entrypoints.cli.main", "serve",
    ]  # fmt: skip
    assert resolve_argv(("arctic-swe", "serve"), python)[:3] == [python, "-m", "arctic_swe._cli"]
    assert resolve_argv(("torchrun",), python) == [python, "-m", "torch.distributed.run"]


def test_the_interpreter_symlink_is_not_resolved(tmp_path: Path) -> None:
    target = _fake_env(tmp_path / "base")
    (tmp_path / "venv" / "bin").mkdir(parents=True)
    link = tmp_path / "venv" / "bin" / "python"
    link.symlink_to(target)
    (tmp_path / "venv" / "bin" / "vllm").write_text("")
    assert resolve_argv(("vllm",), str(link)) == [str(tmp_path / "venv" / "bin" / "vllm")]


def test_empty_means_the_launchers_environment_and_paths_stay() -> None:
    resolved = resolve_argv(("arctic-swe", "serve"))
    assert Path(resolved[0]).parent == Path(sys.executable).parent or resolved[1] == "-m"
    assert resolve_argv(("/opt/x/bin/vllm", "serve"), "/elsewhere/python") == [
        "/opt/x/bin/vllm",
        "serve",
    ]


def test_the_fix_syncs_a_named_environment_or_creates_the_documented_one(tmp_path: Path) -> None:
    python = str(_fake_env(tmp_path / "my env"))
    assert fix_command(python, VLLM) == f"UV_PROJECT_ENVIRONMENT='{tmp_path}/my env' {VLLM_SYNC}"
    assert fix_command(python, TRAINER).endswith(DEV_SYNC)
    absent = str(tmp_path / "later" / "bin" / "python")  # not created yet: sync creates it
    assert fix_command(absent, ENGINE).startswith(f"UV_PROJECT_ENVIRONMENT={tmp_path}/later ")
    assert fix_command("", VLLM) == (
        f"UV_PROJECT_ENVIRONMENT=.venv-vllm {VLLM_SYNC}, then set [engines] python = "
        '".venv-vllm/bin/python"'
    )
    assert fix_command("", TRAINER) == f'{DEV_SYNC}, then set [trainer] python = ".venv/bin/python"'
    assert fix_command("/usr/bin/python3", TRAINER).startswith(DEV_SYNC)  # not a venv


def test_a_bare_environment_fails_every_probe(bare_python: Path) -> None:
    for kind in (VLLM, ENGINE, TRAINER):
        result = asyncio.run(probe(str(bare_python), kind))
        assert not result.ok
        assert "ModuleNotFoundError" in result.problem
        assert "\n" not in result.problem
        assert result.versions["python"]  # the probe itself ran there


def test_a_linked_environment_runs_serve_but_not_vllm(linked_python: Path) -> None:
    assert asyncio.run(probe(str(linked_python), ENGINE)).ok
    if "vllm" in sys.modules or _has_vllm():
        pytest.skip("this environment has vllm")
    assert "No module named 'vllm'" in asyncio.run(probe(str(linked_python), VLLM)).problem


def test_an_interpreter_that_cannot_run(tmp_path: Path) -> None:
    result = asyncio.run(probe(str(tmp_path / "absent" / "python"), ENGINE))
    assert not result.ok
    assert result.problem.startswith("cannot run it")
    garbage = tmp_path / "python"
    garbage.write_text("#!/bin/sh\necho not json; echo broken >&2; exit 3\n")
    garbage.chmod(0o755)
    result = asyncio.run(probe(str(garbage), ENGINE))
    assert result.problem == f"the {ENGINE} probe failed: broken"


def test_a_vllm_other_than_0_33_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_text(
        '#!/bin/sh\necho \'{"ok": true, "versions": {"python": "3.11", "vllm": "0.34.1"}}\'\n'
    )
    fake.chmod(0o755)
    result = asyncio.run(probe(str(fake), VLLM))
    assert (result.ok, result.problem) == (False, "has vllm 0.34.1, not 0.33.x")


def test_a_probe_that_hangs_is_stopped_at_its_bound(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    hang = tmp_path / "python"
    hang.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 60\n")
    hang.chmod(0o755)
    result = asyncio.run(probe(str(hang), TRAINER, timeout=1.0))
    assert (result.ok, result.problem) == (False, "the trainer probe took more than 1 s")
    assert not Path(f"/proc/{pid_file.read_text().strip()}").exists()  # killed and reaped


@pytest.mark.slow
def test_the_trainer_probe_patches_qwen3_5_in_a_second_environment(linked_python: Path) -> None:
    result = asyncio.run(probe(str(linked_python), TRAINER))
    assert result.ok, result.problem
    assert result.versions["transformers"]


def _has_vllm() -> bool:
    import importlib.util

    return importlib.util.find_spec("vllm") is not None
