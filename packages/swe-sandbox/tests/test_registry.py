"""Backends by name (`swe_sandbox._registry`): the built-ins, run-time registration, and
third-party backends found through a real ``swe_sandbox.backends`` entry point on sys.path."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import swe_sandbox._registry as registry
from swe_sandbox import (
    DEFAULT_BACKEND,
    BackendPluginError,
    BackendSession,
    BaseImageSpec,
    DockerBackend,
    Limits,
    NamespaceBackend,
    SandboxError,
    UnknownBackendError,
    backend_names,
    create_backend,
    register_backend,
)
from swe_sandbox._cli import main


class FakeBackend:
    """The smallest thing that satisfies the `Backend` protocol's names."""

    name: str = "fake"

    def __init__(self, **options: object) -> None:
        self.options = options

    def check(self) -> None:
        pass

    def start(
        self,
        sandbox_id: str,
        limits: Limits,
        *,
        image: str | None = None,
        masked: tuple[str, ...] = (),
    ) -> BackendSession:
        raise NotImplementedError

    def reap_orphans(self) -> int:
        return 7


@pytest.fixture
def clean_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registrations made by a test vanish with it."""
    monkeypatch.setattr(registry, "_factories", dict(registry._factories))


def write_plugin(root: Path, entry_points: str, module: str) -> None:
    """An installed distribution ``swe-fake-plugin`` on `root`: a dist-info holding
    ``entry_points.txt``, and the module the entry points name."""
    info = root / "swe_fake_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: swe-fake-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
    (root / "swe_fake_plugin.py").write_text(textwrap.dedent(module))


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A plugin distribution with one good backend and three broken entry points."""
    write_plugin(
        tmp_path,
        """\
        [swe_sandbox.backends]
        plugged = swe_fake_plugin:PluggedBackend
        missing = swe_fake_plugin_gone:Backend
        notcallable = swe_fake_plugin:NOT_A_FACTORY
        notbackend = swe_fake_plugin:not_a_backend
        namespace = swe_fake_plugin:PluggedBackend
        """,
        """\
        class PluggedBackend:
            name = "plugged"

            def __init__(self, base=None, flavour="plain"):
                self.base = base
                self.flavour = flavour

            def check(self):
                pass

            def start(self, sandbox_id, limits, *, image=None, masked=()):
                raise NotImplementedError

            def reap_orphans(self):
                return 3

        NOT_A_FACTORY = 42

        def not_a_backend(**options):
            return object()
        """,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_the_built_ins_come_first_and_namespace_is_the_default() -> None:
    assert backend_names()[:2] == ("namespace", "docker")
    assert DEFAULT_BACKEND == "namespace"
    assert isinstance(create_backend("namespace"), NamespaceBackend)
    docker = create_backend("docker", watchdog=False)  # constructing one does not connect
    assert isinstance(docker, DockerBackend)
    assert docker.watchdog is False


def test_options_reach_the_constructor() -> None:
    spec = BaseImageSpec(suite="trixie")
    backend = create_backend("namespace", base=spec, seccomp=False)
    assert isinstance(backend, NamespaceBackend)
    assert backend.seccomp is False
    assert backend._base == spec


def test_an_unknown_name_is_a_typed_error_naming_the_known_ones() -> None:
    with pytest.raises(UnknownBackendError) as caught:
        create_backend("podman")
    assert str(caught.value) == "unknown sandbox backend 'podman'; known: namespace, docker"
    assert caught.value.known == backend_names()
    # callers that catch ValueError or the package's base class still catch it
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value, SandboxError)


@pytest.mark.usefixtures("clean_registry")
def test_registration_adds_a_name_and_refuses_to_replace_silently() -> None:
    register_backend("fake", FakeBackend)
    assert backend_names()[-1] == "fake"
    made = create_backend("fake", depth=2)
    assert isinstance(made, FakeBackend)
    assert made.options == {"depth": 2}
    with pytest.raises(ValueError, match="already registered"):
        register_backend("fake", FakeBackend)
    register_backend("fake", lambda **options: FakeBackend(replaced=True), replace=True)
    replaced = create_backend("fake")
    assert isinstance(replaced, FakeBackend)
    assert replaced.options == {"replaced": True}


@pytest.mark.parametrize("name", ["", "two words", "a/b"])
def test_a_name_that_is_not_a_word_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match="backend name"):
        register_backend(name, FakeBackend)


def test_a_factory_must_be_callable() -> None:
    with pytest.raises(TypeError, match="must be callable"):
        register_backend("fake", "FakeBackend")  # type: ignore[arg-type]


@pytest.mark.usefixtures("plugin")
def test_an_entry_point_backend_is_listed_and_built() -> None:
    names = backend_names()
    assert names[:2] == ("namespace", "docker")  # the built-ins, unshadowed
    assert "plugged" in names
    assert names.count("namespace") == 1
    backend = create_backend("plugged", flavour="spicy")
    assert type(backend).__name__ == "PluggedBackend"
    assert backend.reap_orphans() == 3
    assert backend.flavour == "spicy"  # type: ignore[attr-defined]


@pytest.mark.usefixtures("plugin")
def test_a_registered_name_wins_over_an_entry_point_of_the_same_name() -> None:
    assert isinstance(create_backend("namespace"), NamespaceBackend)


@pytest.mark.usefixtures("plugin")
@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("missing", r"cannot be loaded: ModuleNotFoundError"),
        ("notcallable", r"names 42, not a backend factory"),
        ("notbackend", r"made object, which has no start / reap_orphans"),
    ],
)
def test_a_broken_entry_point_is_a_typed_error_naming_it(name: str, why: str) -> None:
    with pytest.raises(BackendPluginError, match=why) as caught:
        create_backend(name)
    message = str(caught.value)
    assert f"sandbox backend {name!r}" in message
    assert "group swe_sandbox.backends" in message
    assert "swe-fake-plugin 1.0" in message


def test_a_broken_entry_point_spoils_nothing_else(plugin: Path) -> None:
    assert "missing" in backend_names()  # listed without being imported
    assert isinstance(create_backend("namespace"), NamespaceBackend)


@pytest.mark.usefixtures("plugin")
def test_the_cli_offers_and_builds_an_entry_point_backend(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["janitor", "--backend", "plugged"]) == 0
    assert capsys.readouterr().out.strip() == '{"reaped": 3}'


def test_the_cli_refuses_a_name_nobody_registered(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["janitor", "--backend", "plugged"])
    assert caught.value.code == 2
    assert "invalid choice: 'plugged'" in capsys.readouterr().err
