"""The repository stands alone: nothing tracked points outside it, every member ships a LICENSE.

References must survive a fresh clone: the paper is cited by title and section ("Arctic-SWE
§3.3"), the architecture by ``ARCHITECTURE.md``; never a path outside the repository, the
working notes the code was written from, or the numbers of the tracker issues it was built under.
"""

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MEMBERS = sorted(
    p.parent for p in [*ROOT.glob("packages/*/pyproject.toml"), *ROOT.glob("apps/*/pyproject.toml")]
)

#: What must not appear in any tracked text file, with the reason a reader would give.
FORBIDDEN = {
    "link outside the repository": re.compile(r"\.\./shared\b"),
    "design notes that do not ship": re.compile(r"\bDESIGN\.md\b"),
    "working-note (seed) citation": re.compile(
        r"\bseeds?\W{0,4}0\d\d(?!\d)|\bseeds/", re.IGNORECASE
    ),
    "working-note file name": re.compile(r"\b00\d_[0-9a-f]{16}\b"),
    "tracker issue number": re.compile(r"\bissues? #\d+", re.IGNORECASE),
}


def _tracked_text_files() -> list[Path]:
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the tracked tree is unknown")
    names = subprocess.run(
        [git, "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    return [ROOT / n.decode() for n in names if n and not n.endswith(b".lock")]


def find_references(text: str) -> list[str]:
    """The forbidden references in ``text``, as ``"<why>: <match>"``."""
    return [f"{why}: {m.group(0)!r}" for why, rx in FORBIDDEN.items() for m in rx.finditer(text)]


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("see ../shared/DESIGN.md", 2),
        ("(seed 000 §3.3, seed 002 §4.3)", 2),
        ("seeds `000_…` §3.3", 1),
        ("Seed 003 curriculum", 1),
        ("from 000_a2a5a12add93ef84.txt", 1),
        ("fixed in issue #11", 1),
        ("(Arctic-SWE §3.3; ARCHITECTURE.md §4)", 0),
        ("--seed 0 and group seeds 1-7; seed=3", 0),
    ],
)
def test_the_patterns_catch_what_they_name(text: str, found: int) -> None:
    assert len(find_references(text)) == found


def test_no_tracked_file_references_outside_the_repository() -> None:
    hits = []
    for path in _tracked_text_files():
        if not path.is_file() or path == Path(__file__).resolve():
            continue  # deleted but not yet committed; or this file, whose examples name them
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # binary
        for number, line in enumerate(text.splitlines(), 1):
            hits.extend(f"{path.relative_to(ROOT)}:{number}: {h}" for h in find_references(line))
    assert not hits, "\n".join(hits)


def test_license_is_the_apache_license_the_members_declare() -> None:
    text = (ROOT / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License")
    assert "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    for member in MEMBERS:
        project = tomllib.loads((member / "pyproject.toml").read_text())["project"]
        assert project["license"] == "Apache-2.0", member.name


@pytest.mark.parametrize("member", MEMBERS, ids=lambda p: p.name)
def test_member_sdist_is_configured_to_carry_readme_changelog_and_license(member: Path) -> None:
    # license-files cannot reach above the member, so each holds a copy of the root LICENSE;
    # `nox -s build` checks the built archives themselves.
    assert (member / "LICENSE").read_text() == (ROOT / "LICENSE").read_text()
    pyproject = tomllib.loads((member / "pyproject.toml").read_text())
    project = pyproject["project"]
    assert project["readme"] == "README.md"
    assert project["license-files"] == ["LICENSE"]
    assert "CHANGELOG.md" in pyproject["tool"]["uv"]["build-backend"]["source-include"]
    assert (member / "CHANGELOG.md").is_file()
    assert {"Homepage", "Documentation", "Changelog"} <= set(project["urls"])
    assert "Typing :: Typed" in project["classifiers"]
