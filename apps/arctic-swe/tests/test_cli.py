"""Tests for ``arctic_swe._cli`` (mirrors src/arctic_swe/_cli.py)."""

from importlib.metadata import version

import pytest
from arctic_swe._cli import COMPONENTS, component_versions, main


def test_every_component_is_installed_with_its_version() -> None:
    found = component_versions()
    assert set(found) == set(COMPONENTS)
    for name, got in found.items():
        assert got == version(name)


def test_components_command_lists_each_package(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["components"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(COMPONENTS)


def test_no_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    assert "usage: arctic-swe" in capsys.readouterr().out


def test_unknown_command_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as excinfo:
        main(["no-such-command"])
    assert excinfo.value.code == 2
