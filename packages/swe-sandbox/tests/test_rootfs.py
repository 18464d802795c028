"""`_rootfs`: the mirror comes from apt configuration (both formats) or the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from swe_sandbox import BaseImageSpec, ImageBuildError, mirror_from_apt


def test_deb822_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SWE_SANDBOX_MIRROR", raising=False)
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\n"
        "Components: main\n\nTypes: deb\nURIs: http://security.example/debian-security\n"
        "Suites: bookworm-security\nComponents: main\n"
    )
    assert mirror_from_apt("bookworm", tmp_path) == "http://mirror.example/debian"


def test_one_line_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SWE_SANDBOX_MIRROR", raising=False)
    (tmp_path / "sources.list").write_text(
        "# comment\ndeb-src http://src.example/debian bookworm main\n"
        "deb [arch=amd64 signed-by=/k.gpg] http://one.example/debian bookworm main\n"
    )
    assert mirror_from_apt("bookworm", tmp_path) == "http://one.example/debian"


def test_environment_overrides_and_missing_suite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SWE_SANDBOX_MIRROR", raising=False)
    with pytest.raises(ImageBuildError, match="no apt source"):
        mirror_from_apt("trixie", tmp_path)
    monkeypatch.setenv("SWE_SANDBOX_MIRROR", "http://env.example/debian")
    assert mirror_from_apt("trixie", tmp_path) == "http://env.example/debian"


def test_content_hash_follows_the_recipe_not_the_mirror() -> None:
    base = BaseImageSpec()
    assert base.content_hash == BaseImageSpec(mirror="http://other.example/debian").content_hash
    assert base.content_hash != BaseImageSpec(packages=("python3",)).content_hash
    assert base.docker_tag == f"swe-sandbox-base:{base.content_hash}"
