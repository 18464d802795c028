"""Nox sessions for the Arctic-SWE workspace (uv backend).

Per member:  tests(package)  import_alone(package)  typecheck(package)  build(package)
             lowest(package)  newest(package)  wheel_alone(package)
Workspace:   lint  integration  bench_smoke  nightly  nightly_ablate  differential (swe-formatcheck vs vLLM)

`import_alone` is the one that proves a piece can be lifted into another RL stack: a fresh
environment holding only that member and its own dependencies imports it from outside the source
tree, holds none of the packages ARCHITECTURE.md §2 forbids for it, and passes the member's tests.
`lowest` and `newest` do the same without the lock, at the lowest versions its direct
dependencies allow and at the newest ones the index has; `wheel_alone` installs the built wheel
with plain pip, as a user would, and runs the README's example verbatim.
"""

from __future__ import annotations

import json
import tarfile
import tomllib
import zipfile
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["lint", "tests", "import_alone"]

ROOT = Path(__file__).parent


def _members() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for pyproject in sorted(
        [*ROOT.glob("packages/*/pyproject.toml"), *ROOT.glob("apps/*/pyproject.toml")]
    ):
        found[tomllib.loads(pyproject.read_text())["project"]["name"]] = pyproject.parent
    return found


MEMBERS = _members()

#: ARCHITECTURE.md §2 "must not pull": importable modules that must be absent from a member's own env.
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "swe-formatcheck": ("torch", "numpy"),
    "load-router": ("torch",),
    "deck-evictor": ("torch",),
    "swe-sandbox": ("torch",),
    "swe-curate": ("torch",),
    "cispo-loss": ("transformers",),
}


def _module(package: str) -> str:
    return package.replace("-", "_")


def _sync(session: nox.Session, *args: str) -> None:
    """Install exactly the locked set that `args` selects into this session's environment."""
    session.run_install(
        "uv",
        "sync",
        "--locked",
        *args,
        env={"UV_PROJECT_ENVIRONMENT": session.virtualenv.location},
    )


#: The `vllm` extra pins its own torch/transformers and is declared conflicting with the dev tools
#: (root pyproject): test environments never hold it.
_NO_VLLM = ("--no-extra", "vllm")


def _sync_alone(session: nox.Session, package: str) -> None:
    # uv refuses `--no-extra NAME` for a member that does not define NAME: only arctic-swe has it.
    defined = _project(package).get("optional-dependencies", {})
    excluded = _NO_VLLM if isinstance(defined, dict) and "vllm" in defined else ()
    _sync(session, f"--package={package}", "--all-extras", *excluded)


def _sync_workspace(session: nox.Session) -> None:
    _sync(session, "--all-packages", "--all-extras", *_NO_VLLM)


@nox.session
@nox.parametrize("package", list(MEMBERS))
def tests(session: nox.Session, package: str) -> None:
    """The member's tests in the full workspace environment."""
    _sync_workspace(session)
    session.run("pytest", str(MEMBERS[package] / "tests"), *session.posargs)


@nox.session
@nox.parametrize("package", list(MEMBERS))
def import_alone(session: nox.Session, package: str) -> None:
    """A fresh environment with only this member and its own dependencies imports it and passes its tests."""
    _sync_alone(session, package)
    forbidden = FORBIDDEN.get(package, ())
    check = (
        "import importlib.util, sys\n"
        f"import {_module(package)}\n"
        f"leaked = [m for m in {forbidden!r} if importlib.util.find_spec(m) is not None]\n"
        "sys.exit(f'forbidden dependencies installed: {leaked}' if leaked else 0)\n"
    )
    # -I (isolated mode) keeps the working directory off sys.path: the import must come from what
    # was installed into this environment, never from the checkout by accident.
    session.run("python", "-I", "-c", check)
    session.run("pytest", str(MEMBERS[package] / "tests"), *session.posargs)


@nox.session
@nox.parametrize("package", list(MEMBERS))
def typecheck(session: nox.Session, package: str) -> None:
    """mypy --strict (root config) on the member's sources, in its own environment."""
    _sync_alone(session, package)
    session.install("mypy>=1.14")
    session.run("mypy", str(MEMBERS[package] / "src"))


@nox.session
def lint(session: nox.Session) -> None:
    """ruff lint and format check over the whole tree."""
    session.install("ruff>=0.9")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(venv_backend="none")
@nox.parametrize("package", list(MEMBERS))
def build(session: nox.Session, package: str) -> None:
    """Build the member's sdist and wheel into dist/; the wheel ships py.typed and LICENSE, the
    sdist README, CHANGELOG and LICENSE."""
    session.run(
        "uv", "build", f"--package={package}", "--out-dir", str(ROOT / "dist"), external=True
    )
    module = _module(package)
    wheel = max((ROOT / "dist").glob(f"{module}-*.whl"), key=lambda p: p.stat().st_mtime)
    names = zipfile.ZipFile(wheel).namelist()
    for needed in (
        f"{module}/py.typed",
        f"{wheel.name.rsplit('-', 3)[0]}.dist-info/licenses/LICENSE",
    ):
        if needed not in names:
            session.error(f"{wheel.name} does not ship {needed}")
    sdist = max((ROOT / "dist").glob(f"{module}-*.tar.gz"), key=lambda p: p.stat().st_mtime)
    top = sdist.name.removesuffix(".tar.gz")
    with tarfile.open(sdist) as archive:
        members = set(archive.getnames())
    missing = [f for f in ("README.md", "CHANGELOG.md", "LICENSE") if f"{top}/{f}" not in members]
    if missing:
        session.error(f"{sdist.name} does not carry {', '.join(missing)}")


@nox.session
def integration(session: nox.Session) -> None:
    """Tests that compose several packages (real sandboxes, real tiny model)."""
    _sync_workspace(session)
    session.run("pytest", "integration_tests", *session.posargs)


@nox.session
def bench_smoke(session: nox.Session) -> None:
    """Run every benchmark at its smallest size (`--smoke`) and check it prints one JSON object
    last. A `name.sh` wrapper runs instead of its `name.py` (the GPU suite: its CPU dry run
    under the Triton interpreter, through the same shell script the GPU machine runs)."""
    _sync_workspace(session)
    scripts = sorted((ROOT / "benchmarks").glob("*.py")) + sorted(
        (ROOT / "benchmarks").glob("*.sh")
    )
    wrapped = {s.with_suffix(".py") for s in scripts if s.suffix == ".sh"}
    for script in scripts:
        if script in wrapped:
            continue
        if script.suffix == ".sh":
            out = session.run(
                "bash", str(script), "--smoke", silent=True, external=True,
                env={"PYTHON": str(Path(session.bin) / "python")},
            )  # fmt: skip
        else:
            out = session.run("python", str(script), "--smoke", silent=True)
        try:
            json.loads(str(out).strip().splitlines()[-1])
        except (ValueError, IndexError) as exc:
            session.error(f"{script.name} did not print a JSON object last: {exc}")
        session.log(f"{script.name}: ok")


@nox.session
def differential(session: nox.Session) -> None:
    """swe-formatcheck against vLLM's tool and reasoning parsers (vLLM + torch: a few GB; run
    nightly, not in CI). The locked `arctic-swe[vllm]` set without the dev group, then pytest and
    hypothesis; posargs go to the script mode (default ``--turns 5000``; the README's figures use
    ``-- --turns 100000``)."""
    _sync(session, "--package=arctic-swe", "--extra", "vllm", "--no-dev")
    session.install("pytest>=8.3", "hypothesis>=6.100")
    tests = MEMBERS["swe-formatcheck"] / "tests"
    session.run("pytest", str(tests / "test_differential_vllm.py"))
    session.run(
        "python", str(tests / "differential_vllm.py"), *(session.posargs or ["--turns", "5000"])
    )


@nox.session(tags=["nightly"])
def vllm_conformance(session: nox.Session) -> None:
    """HttpEngine against vLLM 0.33's own RL, RPC and cache routers and exception handlers,
    over loopback HTTP, with a CPU stand-in engine client behind them (no GPU). The locked
    `arctic-swe[vllm]` set without the dev group (vLLM: ~9 GB), then pytest. Nightly, not CI:
    building the environment on a fresh machine (~9 GB) plus ~5 min of tests would take the
    30-minute CI budget past its margin."""
    _sync(session, "--package=arctic-swe", "--extra", "vllm", "--no-dev")
    session.install("pytest>=8.4", "hypothesis>=6.100")
    session.run(
        "pytest", "integration_tests/vllm_conformance", "-q", "-p", "no:cacheprovider",
        *session.posargs,
    )  # fmt: skip
    # The trainer may share vLLM's environment (the NCCL path on GPU needs vLLM's trainer-side
    # code): hybrid-numerics' whole suite on the torch / transformers vLLM 0.33 pins.
    tests = MEMBERS["hybrid-numerics"] / "tests"
    session.run("pytest", str(tests), "-q", "-p", "no:cacheprovider")


@nox.session
def fla_peer(session: nox.Session) -> None:
    """hybrid-numerics' fla-compatible call surface against fla-core 0.6.0's own signatures, in
    an environment of its own (fla is never in the workspace: transformers would route Qwen3.5
    layers to its GPU kernels)."""
    _sync_workspace(session)
    session.install("fla-core==0.6.0")
    tests = MEMBERS["hybrid-numerics"] / "tests"
    session.run(
        "pytest", str(tests / "test_fla_peer.py"), "-p", "no:cacheprovider", *session.posargs
    )


@nox.session(tags=["nightly"])
def nightly(session: nox.Session) -> None:
    """The heavy cases (`slow` marker) across the whole workspace."""
    _sync_workspace(session)
    session.run("pytest", "-m", "slow", *session.posargs)


@nox.session(tags=["nightly"])
def nightly_ablate(session: nox.Session) -> None:
    """The long stress-test ablation (`arctic-swe ablate --preset long`: the full recipe and
    every broken variant, up to 360 updates each: a variant that retires every pool task stops
    there, 92-109 updates and 22-25 min each measured; `no-eviction` never does) into
    runs/nightly/<UTC date>/; the deck and the warm start in runs/nightly/ are built once and
    shared by every night. Rerun the same day to resume. posargs go to `arctic-swe ablate`
    (e.g. `-- --variants full,clip`, or `-- --seeds 0,1,2` for several seeds per variant).
    `nox -t nightly` runs it after the slow tests."""
    import datetime

    _sync_workspace(session)
    root = ROOT / "runs" / "nightly"
    day = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    session.run(
        "arctic-swe", "ablate", "--preset", "long", "--out", str(root / day),
        "--deck", str(root / "deck"), "--policy", str(root / "warmstart"), *session.posargs,
    )  # fmt: skip


# --- Dependency ranges and wheels, as a user outside the workspace gets them --------------------

DIST = ROOT / "dist"
#: The extras a member's tests exercise (`vllm` pins its own torch/transformers: never here).
_SKIPPED_EXTRAS = frozenset({"vllm"})


def _project(package: str) -> dict[str, object]:
    project = tomllib.loads((MEMBERS[package] / "pyproject.toml").read_text())["project"]
    assert isinstance(project, dict)
    return project


def _extras(package: str) -> list[str]:
    optional = _project(package).get("optional-dependencies", {})
    assert isinstance(optional, dict)
    return sorted(set(optional) - _SKIPPED_EXTRAS)


def _requirement_name(requirement: str) -> str:
    name = requirement.split(";")[0]
    for stop in "<>=!~[ ":
        name = name.split(stop)[0]
    return name.strip().lower().replace("_", "-")


def _siblings(package: str) -> list[str]:
    """The workspace members `package` needs, dependencies first (they are not on any index)."""
    ordered: list[str] = []

    def visit(name: str) -> None:
        dependencies = _project(name).get("dependencies", [])
        assert isinstance(dependencies, list)
        for requirement in dependencies:
            sibling = _requirement_name(str(requirement))
            if sibling in MEMBERS and sibling not in ordered:
                visit(sibling)
                ordered.append(sibling)

    visit(package)
    return ordered


def _with_extras(target: str, package: str) -> str:
    extras = _extras(package)
    return f"{target}[{','.join(extras)}]" if extras else target


def _test_tools(package: str) -> list[str]:
    """The member's own `dev` dependency group: what its tests need besides the package."""
    groups = tomllib.loads((MEMBERS[package] / "pyproject.toml").read_text()).get(
        "dependency-groups", {}
    )
    return [str(requirement) for requirement in groups.get("dev", [])]


def _range_session(session: nox.Session, package: str, resolution: str) -> None:
    """Install `package` (and the workspace members it needs) from source without the lock, at
    `resolution`, then run its tests. Siblings come from their folders, never from an index."""
    siblings = [str(MEMBERS[name]) for name in _siblings(package)]
    session.install(
        f"--resolution={resolution}",
        *siblings,
        _with_extras(str(MEMBERS[package]), package),
        *_test_tools(package),
    )
    # What the run actually tested against goes into the log, next to its result.
    session.run("uv", "pip", "freeze", "--python", str(Path(session.bin) / "python"), external=True)
    session.run("python", "-I", "-c", f"import {_module(package)}")
    session.run("pytest", str(MEMBERS[package] / "tests"), *session.posargs)


@nox.session(reuse_venv=False)
@nox.parametrize("package", list(MEMBERS))
def lowest(session: nox.Session, package: str) -> None:
    """The member alone at the lowest versions its direct dependencies allow (uv's
    `lowest-direct`: the floors of its own pyproject, transitive ones newest), with its tests."""
    _range_session(session, package, "lowest-direct")


@nox.session(reuse_venv=False)
@nox.parametrize("package", list(MEMBERS))
def newest(session: nox.Session, package: str) -> None:
    """The member alone at the newest versions the index has today (no lock), with its tests."""
    _range_session(session, package, "highest")


def _version(package: str) -> str:
    return str(_project(package)["version"])


def _wheel_file(package: str) -> Path:
    wheel = DIST / f"{_module(package)}-{_version(package)}-py3-none-any.whl"
    if not wheel.is_file():
        raise FileNotFoundError(f"{wheel.name} is not in {DIST}: run `uv run nox -s build` first")
    return wheel


def _example_blocks(package: str) -> list[str]:
    """The python blocks of the README's `## Example…` sections, illustrations left out: the
    quick-start a new user copies. Blocks and their markers are read by the README test's own
    parser (`integration_tests/test_readme_examples.py`), so both agree on what a block is."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "readme_examples", ROOT / "integration_tests" / "test_readme_examples.py"
    )
    assert spec is not None
    assert spec.loader is not None
    readme_examples = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(readme_examples)
    readme = MEMBERS[package] / "README.md"
    headings = [
        (number, line.startswith("## Example"))
        for number, line in enumerate(readme.read_text().splitlines(), start=1)
        if line.startswith("## ")
    ]

    def in_example(line: int) -> bool:
        above = [is_example for number, is_example in headings if number < line]
        return bool(above) and above[-1]

    return [
        block.code
        for block in readme_examples.readme_blocks(readme)
        if block.language == "python" and block.marker != "illustration" and in_example(block.line)
    ]


#: Each public testing kit has one test that writes a user's test module into an empty directory
#: and runs it there with `python -I -m pytest`: with the wheel installed, that is a user's test
#: file outside the repository using the kit from the installed package.
_OUTSIDE_TEST = "test_the_kit_runs_from_a_test_module_outside_the_repository"


@nox.session(venv_backend="venv", reuse_venv=False)
@nox.parametrize("package", list(MEMBERS))
def wheel_alone(session: nox.Session, package: str) -> None:
    """Install the member's wheel from dist/ into a fresh venv with plain pip, as its README's
    "Install" section says (sibling wheels named by file, so no index copy of their names can
    win), check the environment, and run the README's example blocks verbatim from an empty
    directory. A member with a `testing` extra then runs its kit from a user's test file outside
    the repository against the installed wheel."""
    wheels = [str(_wheel_file(name)) for name in _siblings(package)]
    target = _with_extras(str(_wheel_file(package)), package)
    session.run(
        "python", "-m", "pip", "install", "--quiet", "--find-links", str(DIST), *wheels, target
    )
    session.run("python", "-m", "pip", "check")
    outside = Path(session.create_tmp()).resolve()
    for number, code in enumerate(_example_blocks(package)):
        script = outside / f"example_{number}.py"
        script.write_text(code)
        with session.chdir(outside):
            session.run("python", "-I", str(script))
    if "testing" in _extras(package):
        session.run("python", "-m", "pip", "install", "--quiet", *_test_tools(package))
        session.run(
            "python", "-m", "pytest", "-q", "-p", "no:cacheprovider",
            str(MEMBERS[package] / "tests"), "-k", _OUTSIDE_TEST,
        )  # fmt: skip
