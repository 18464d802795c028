"""Independent versioning holds together: each member states its version in one way everywhere,
every sibling range admits the sibling as it is, and each README's install lines name the wheel
files `nox -s build` writes (CONTRIBUTING.md, "Versions" and "Wheels")."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
MEMBER_DIRS = sorted(
    [
        p.parent
        for p in (*ROOT.glob("packages/*/pyproject.toml"), *ROOT.glob("apps/*/pyproject.toml"))
    ]
)


def _project(member: Path) -> dict[str, object]:
    project = tomllib.loads((member / "pyproject.toml").read_text())["project"]
    assert isinstance(project, dict)
    return project


PROJECTS = {str(_project(m)["name"]): m for m in MEMBER_DIRS}
VERSIONS = {name: str(_project(m)["version"]) for name, m in PROJECTS.items()}
CHANGELOG_HEADING = re.compile(r"^## (\S+) — (unreleased|Unreleased|\d{4}-\d{2}-\d{2})$", re.M)


def _module(name: str) -> str:
    return name.replace("-", "_")


@pytest.mark.parametrize("name", sorted(PROJECTS))
def test_version_module_matches_pyproject(name: str) -> None:
    text = (PROJECTS[name] / "src" / _module(name) / "_version.py").read_text()
    found = re.search(r'^__version__ = "([^"]+)"$', text, re.M)
    assert found is not None, f"{name}: no __version__ line"
    assert found.group(1) == VERSIONS[name]


@pytest.mark.parametrize("name", sorted(PROJECTS))
def test_changelog_tops_with_the_current_version(name: str) -> None:
    headings = CHANGELOG_HEADING.findall((PROJECTS[name] / "CHANGELOG.md").read_text())
    assert headings, f"{name}: CHANGELOG has no '## VERSION — DATE' heading"
    assert headings[0][0] == VERSIONS[name], f"{name}: CHANGELOG tops with {headings[0][0]}"
    # one heading per version: a release never reuses a number
    assert len({version for version, _ in headings}) == len(headings)


def _sibling_requirements() -> list[tuple[str, Requirement]]:
    found = []
    for name, member in PROJECTS.items():
        dependencies = _project(member).get("dependencies", [])
        assert isinstance(dependencies, list)
        for line in dependencies:
            requirement = Requirement(str(line))
            if requirement.name in PROJECTS:
                found.append((name, requirement))
    return found


SIBLINGS = _sibling_requirements()


def test_the_workspace_has_sibling_dependencies() -> None:
    # the checks below are vacuous without any: swe-curate and the app depend on siblings
    assert {name for name, _ in SIBLINGS} >= {"swe-curate", "arctic-swe"}


@pytest.mark.parametrize(("name", "requirement"), SIBLINGS, ids=lambda v: str(v))
def test_sibling_ranges_admit_the_current_sibling_and_cap_the_next_breaking_one(
    name: str, requirement: Requirement
) -> None:
    current = VERSIONS[requirement.name]
    assert requirement.specifier.contains(current), f"{name}: {requirement} excludes {current}"
    major, minor, _ = (int(part) for part in current.split("."))
    next_breaking = f"{major}.{minor + 1}.0" if major == 0 else f"{major + 1}.0.0"
    assert not requirement.specifier.contains(next_breaking), f"{name}: {requirement} is open"


def _install_block(readme: Path) -> str:
    text = readme.read_text()
    section = text.split("\n## Install", 1)[1].split("\n## ", 1)[0]
    fence = re.search(r"```bash\n(.*?)```", section, re.S)
    assert fence is not None, f"{readme}: the Install section has no bash block"
    return fence.group(1)


@pytest.mark.parametrize("name", sorted(PROJECTS))
def test_readme_install_names_the_built_wheels(name: str) -> None:
    block = _install_block(PROJECTS[name] / "README.md")
    assert "uv build --all-packages --out-dir dist" in block
    needed = [*(r.name for n, r in SIBLINGS if n == name), name]
    for wheel_of in needed:
        wheel = f"dist/{_module(wheel_of)}-{VERSIONS[wheel_of]}-py3-none-any.whl"
        assert wheel in block, f"{name}: install lines do not name {wheel}"
