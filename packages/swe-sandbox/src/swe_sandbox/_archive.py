"""Safe extraction of repository archives (sdists, ``docker cp`` / ``get_archive`` streams).

Real repositories contain symlinks (``docs/README -> ../README.md``) and archives may contain
hard links, so both are kept — but only when they resolve *inside* the tree. Resolution is
done on the archive's own namespace before anything is written: every link is followed
through the other links of the archive, component by component, and a path that climbs
above the root or names an absolute target is refused (``PathEscapeError``). Files and
directories are written first and links last, and no member may sit below a symlink member,
so nothing is ever written *through* a link.

Member names follow GNU tar: ``strip_components`` drops that many literal leading components
(``./`` counts as one, as in ``tar --strip-components``), then ``.`` components are dropped.
"""

from __future__ import annotations

import os
import shutil
import tarfile
from pathlib import Path

from swe_sandbox._errors import PathEscapeError

#: Symlink hops followed when resolving one path (the kernel's own limit is 40).
MAX_LINK_HOPS = 40


def member_parts(
    name: str, strip_components: int = 0, under: tuple[str, ...] = ()
) -> tuple[str, ...] | None:
    """The path components of archive member `name` after stripping; ``None`` if nothing is
    left (the member is the stripped root itself).

    `under` (normalised components, e.g. ``("testbed",)``) is a top directory every member
    must lie in; it is removed (``PathEscapeError`` for a member outside it).
    """
    raw = [p for p in name.split("/") if p != ""]
    kept = [p for p in raw[strip_components:] if p != "."]
    if under:
        if tuple(kept[: len(under)]) != under:
            raise PathEscapeError(f"archive member {name!r} is not below {'/'.join(under)!r}")
        kept = kept[len(under) :]
    return tuple(kept) if kept else None


def _resolve(parts: tuple[str, ...], links: dict[tuple[str, ...], str]) -> tuple[str, ...] | None:
    """Resolve `parts` against the archive's symlinks; ``None`` when it leaves the root."""
    pending = list(parts)
    resolved: list[str] = []
    hops = 0
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            if not resolved:
                return None
            resolved.pop()
            continue
        resolved.append(part)
        target = links.get(tuple(resolved))
        if target is None:
            continue
        hops += 1
        if hops > MAX_LINK_HOPS or target.startswith("/"):
            return None
        resolved.pop()
        pending = [*target.split("/"), *pending]
    return tuple(resolved)


def _plan(
    archive: tarfile.TarFile, strip_components: int, under: tuple[str, ...]
) -> tuple[list[tuple[tarfile.TarInfo, tuple[str, ...]]], dict[tuple[str, ...], str]]:
    members: list[tuple[tarfile.TarInfo, tuple[str, ...]]] = []
    links: dict[tuple[str, ...], str] = {}
    for member in archive.getmembers():
        parts = member_parts(member.name, strip_components, under)
        if parts is None:
            continue
        if member.name.startswith("/") or ".." in parts:
            raise PathEscapeError(f"archive member {member.name!r} escapes the destination")
        if member.issym():
            links[parts] = member.linkname
        if member.isdir() or member.isfile() or member.issym() or member.islnk():
            members.append((member, parts))  # devices/fifos: meaningless in a tree, skipped
    for member, parts in members:
        for depth in range(1, len(parts)):
            if parts[:depth] in links:
                raise PathEscapeError(f"archive member {member.name!r} lies below a symlink")
        if member.issym() and _resolve(parts, links) is None:
            raise PathEscapeError(
                f"archive member {member.name!r} is a symlink to {member.linkname!r},"
                " outside the tree: refused"
            )
    return members, links


def safe_extract(
    archive: tarfile.TarFile, dest: Path, *, strip_components: int = 0, under: str = ""
) -> None:
    """Extract files, directories and in-tree links of `archive` into `dest`.

    Refused with `PathEscapeError` before anything is written: absolute or ``..`` names, a
    symlink whose target (followed through the archive's other links) leaves the tree, a hard
    link to anything but a regular file of the archive, a member below a symlink. Devices and
    fifos are skipped. File modes keep only the executable bit (0755 / 0644). `under` names a
    top directory (``"testbed"``) every member must lie in and that is removed.
    """
    top = tuple(p for p in under.split("/") if p not in ("", "."))
    members, links = _plan(archive, strip_components, top)
    files = {parts for member, parts in members if member.isfile()}
    hard: list[tuple[tarfile.TarInfo, tuple[str, ...], tuple[str, ...]]] = []
    for member, parts in members:
        if member.islnk():
            linked = member_parts(member.linkname, strip_components, top)
            resolved = _resolve(linked, links) if linked else None
            if resolved is None or resolved not in files:
                raise PathEscapeError(
                    f"archive member {member.name!r} is a hard link to {member.linkname!r},"
                    " which is not a regular file of the tree: refused"
                )
            hard.append((member, parts, resolved))
    for member, parts in members:
        target = dest.joinpath(*parts)
        if member.isdir():
            target.mkdir(parents=True, exist_ok=True)
        elif member.isfile():
            target.parent.mkdir(parents=True, exist_ok=True)
            source = archive.extractfile(member)
            assert source is not None
            with source, open(target, "wb") as out:
                shutil.copyfileobj(source, out)
            os.chmod(target, 0o755 if member.mode & 0o111 else 0o644)
    for _member, parts, resolved in hard:
        target = dest.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)
        shutil.copy2(dest.joinpath(*resolved), target)  # a copy: the tree owns each file
    for member, parts in members:
        if member.issym():
            target = dest.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_symlink() or target.is_file():
                target.unlink()
            os.symlink(member.linkname, target)
