"""The four command lines document one exit-code convention in the same words: a reader of any
one README learns the rule for all of them (CONTRIBUTING.md, "Exit codes")."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CLI_READMES = [
    ROOT / "apps" / "arctic-swe" / "README.md",
    ROOT / "packages" / "swe-sandbox" / "README.md",
    ROOT / "packages" / "swe-curate" / "README.md",
    ROOT / "packages" / "load-router" / "README.md",
]
SHARED_END = "Every error is one line on stderr"


def shared_convention(readme: Path) -> str:
    """The README's "Exit codes" section up to and including the line every CLI shares."""
    text = readme.read_text()
    assert "\n### Exit codes\n" in text, f"{readme} has no 'Exit codes' section"
    section = text.split("\n### Exit codes\n", 1)[1]
    assert SHARED_END in section, f"{readme}: the shared convention is not in its section"
    return section.split(SHARED_END, 1)[0]


@pytest.mark.parametrize("readme", CLI_READMES[1:], ids=lambda p: p.parent.name)
def test_every_cli_readme_states_the_convention_in_the_same_words(readme: Path) -> None:
    assert shared_convention(readme) == shared_convention(CLI_READMES[0])


def test_the_convention_names_both_error_codes() -> None:
    convention = shared_convention(CLI_READMES[0])
    assert "| 1 | runtime failure" in convention
    assert "| 2 | usage error" in convention
