"""`safe_extract`: trees keep their paths and in-tree links; escapes are refused before writing."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swe_sandbox import PathEscapeError
from swe_sandbox._archive import member_parts, safe_extract


def _tar(*members: tuple[str, str, str]) -> tarfile.TarFile:
    """Members as (kind, name, data-or-link-target); kind in file, dir, sym, hard."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for kind, name, value in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                info.size = len(value)
                archive.addfile(info, io.BytesIO(value.encode()))
                continue
            info.type = {"dir": tarfile.DIRTYPE, "sym": tarfile.SYMTYPE, "hard": tarfile.LNKTYPE}[
                kind
            ]
            info.linkname = value
            archive.addfile(info)
    buffer.seek(0)
    return tarfile.open(fileobj=buffer)


def test_strip_counts_a_leading_dot_like_gnu_tar() -> None:
    assert member_parts("./.git/HEAD", 1) == (".git", "HEAD")
    assert member_parts("testbed/pkg/a.py", 1) == ("pkg", "a.py")
    assert member_parts("./", 1) is None
    assert member_parts("testbed/./pkg//a.py", under=("testbed",)) == ("pkg", "a.py")
    with pytest.raises(PathEscapeError):
        member_parts("elsewhere/a.py", under=("testbed",))


def test_docker_style_archive_keeps_nested_paths_and_git(tmp_path: Path) -> None:
    archive = _tar(
        ("dir", ".", ""),
        ("dir", "./.git", ""),
        ("file", "./.git/HEAD", "ref: refs/heads/main\n"),
        ("file", "./timeparse/durations.py", "x = 1\n"),
        ("sym", "./docs/durations.py", "../timeparse/durations.py"),
        ("hard", "./timeparse/copy.py", "./timeparse/durations.py"),
    )
    safe_extract(archive, tmp_path, strip_components=1)
    assert (tmp_path / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"
    assert (tmp_path / "timeparse" / "durations.py").read_text() == "x = 1\n"
    assert (tmp_path / "docs" / "durations.py").read_text() == "x = 1\n"  # via the link
    assert os.readlink(tmp_path / "docs" / "durations.py") == "../timeparse/durations.py"
    assert (tmp_path / "timeparse" / "copy.py").read_text() == "x = 1\n"


@pytest.mark.parametrize(
    "members",
    [
        [("sym", "leak", "/etc/passwd")],  # absolute target
        [("sym", "up", "../outside")],  # climbs out directly
        [("sym", "d/l", ".."), ("sym", "d/m", "l/..")],  # d/l -> ., then .. above the root
        [("sym", "a", "b"), ("sym", "b", "a")],  # a loop never resolves
        [("sym", "dir", "sub"), ("file", "dir/x", "through the link")],  # below a symlink
        [("hard", "h", "/etc/shadow")],
        [("file", "a", "1"), ("hard", "h", "../a")],
        [("sym", "s", "a"), ("file", "a", "1"), ("hard", "h", "nothing-here")],
        [("file", "../evil", "x")],
        [("file", "/abs", "x")],
    ],
)
def test_escapes_are_refused_before_anything_is_written(
    tmp_path: Path, members: list[tuple[str, str, str]]
) -> None:
    with pytest.raises(PathEscapeError):
        safe_extract(_tar(("file", "ok.txt", "fine"), *members), tmp_path)
    assert list(tmp_path.iterdir()) == []


_names = st.text(alphabet="abc", min_size=1, max_size=3)


@given(
    files=st.dictionaries(
        st.lists(_names, min_size=1, max_size=3).map("/".join), _names, max_size=6
    ),
    links=st.lists(
        st.tuples(_names, st.lists(st.sampled_from(["..", "a", "b", "."]), max_size=4)), max_size=4
    ),
)
def test_extracted_links_never_resolve_outside(
    tmp_path_factory: pytest.TempPathFactory,
    files: dict[str, str],
    links: list[tuple[str, list[str]]],
) -> None:
    """Whatever links an archive holds, either it is refused or every extracted link resolves
    (through the real file system) inside the destination."""
    dest = tmp_path_factory.mktemp("x")
    members = [("file", f"t/{name}", data) for name, data in files.items()]
    members += [("sym", f"t/link-{name}", "/".join(target) or ".") for name, target in links]
    try:
        safe_extract(_tar(*members), dest / "out", strip_components=1)
    except (PathEscapeError, FileExistsError, NotADirectoryError, IsADirectoryError):
        return
    root = os.path.realpath(dest / "out")
    for path in (dest / "out").rglob("*") if (dest / "out").exists() else []:
        if path.is_symlink():
            real = os.path.realpath(path)
            assert real == root or real.startswith(root + os.sep), (path, os.readlink(path))
