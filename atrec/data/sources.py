"""Copying the files a dataset needs out of a local source: an archive, a folder or one file.

The needed files are written into a staging folder under their catalogue names; nothing else of
the source is extracted. Optional side files (``DatasetSpec.side``) are copied too when the
source holds them, and skipped silently when it does not. Archives (.zip, .tar.gz, .tgz, .tar) are checked member by member
first, and one with an absolute path, a ``..`` component, a link or a device is refused whole,
so a hostile archive cannot write outside the staging folder.
"""

from __future__ import annotations

import re
import shutil
import stat
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

from atrec.data.catalogue import DatasetSpec, FileSpec
from atrec.errors import DataError

ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz", ".tar")


def stage_from_source(spec: DatasetSpec, source: Path, staging: Path) -> None:
    """Copy the needed files from a local folder, archive or single file into ``staging``."""
    if not source.exists():
        raise DataError(f"source {source} does not exist: give an existing archive, folder or file")
    if source.is_dir():
        candidates = {p.relative_to(source).as_posix(): p
                      for p in sorted(source.rglob("*")) if p.is_file()}
        for f in spec.files:
            shutil.copyfile(candidates[_pick(f, list(candidates), source)], staging / f.name)
        for f in _present(spec.side, list(candidates), source):
            shutil.copyfile(candidates[_pick(f, list(candidates), source)], staging / f.name)
    elif source.name.lower().endswith(ARCHIVE_SUFFIXES):
        stage_from_archive(spec, source, staging)
    elif len(spec.files) == 1:
        shutil.copyfile(source, staging / spec.files[0].name)
    else:
        needed = " and ".join(f.name for f in spec.files)
        raise DataError(
            f"{spec.name} needs {needed}, but {source} is a single file: give the archive or a "
            f"folder holding all of them"
        )


def _pick(spec: FileSpec, candidates: list[str], where: Path) -> str:
    """The candidate path (``/``-separated) holding ``spec``: matched by file name, preferring
    the official member path when several share the name."""
    hits = [c for c in candidates if PurePosixPath(c).name == spec.name]
    if not hits:
        raise DataError(f"{where} has no {spec.name}: give the official archive or a folder "
                        f"holding {spec.name}")
    if len(hits) > 1:
        member = spec.member.removeprefix("./")
        exact = [c for c in hits if c.removeprefix("./") == member or c.endswith("/" + member)]
        if len(exact) != 1:
            raise DataError(f"{where} holds several files named {spec.name} ({', '.join(hits)}):"
                            f" give a folder or archive with only one")
        return exact[0]
    return hits[0]


def _present(side: tuple[FileSpec, ...], candidates: list[str], where: Path) -> list[FileSpec]:
    """The optional side files that ``candidates`` hold (by file name, as :func:`_pick`)."""
    names = {PurePosixPath(c).name for c in candidates}
    return [f for f in side if f.name in names]


def check_member_name(name: str, archive: Path) -> None:
    """Refuse archive member names that are absolute or climb out with ``..``."""
    posix = name.replace("\\", "/")
    if posix.startswith("/") or re.match(r"^[A-Za-z]:", posix):
        raise DataError(f"archive {archive} has a member with an absolute path ({name}): "
                        f"refusing to extract it; use the official archive")
    if ".." in posix.split("/"):
        raise DataError(f"archive {archive} has a member climbing out with '..' ({name}): "
                        f"refusing to extract it; use the official archive")


def _unsafe_kind(archive: Path, name: str, kind: str) -> DataError:
    return DataError(f"archive {archive} has a {kind} member ({name}): refusing to extract it; "
                     f"use the official archive")


def stage_from_archive(spec: DatasetSpec, archive: Path, staging: Path) -> None:
    """Write the needed members of a zip or tar archive into ``staging`` under their spec names.

    Every member is checked first: absolute paths, ``..``, symlinks, hardlinks and devices make
    the whole archive refused. Only regular members are read, never extracted by their own name.
    """
    if zipfile.is_zipfile(archive):
        _stage_from_zip(spec, archive, staging)
        return
    try:
        with tarfile.open(archive, "r:*") as tar:
            members = tar.getmembers()
            regular = {}
            for m in members:
                check_member_name(m.name, archive)
                if m.issym() or m.islnk():
                    raise _unsafe_kind(archive, m.name, "link")
                if m.isdev():
                    raise _unsafe_kind(archive, m.name, "device")
                if m.isfile():
                    regular[m.name] = m
            for f in (*spec.files, *_present(spec.side, list(regular), archive)):
                src = tar.extractfile(regular[_pick(f, list(regular), archive)])
                with src, open(staging / f.name, "wb") as out:
                    shutil.copyfileobj(src, out)
    except (tarfile.TarError, EOFError, OSError) as exc:
        reason = str(exc).splitlines()[0].rstrip(":") if str(exc) else type(exc).__name__
        raise DataError(f"cannot read archive {archive} ({reason}): it is corrupt or not a "
                        f".zip/.tar.gz; download it again") from None


def _stage_from_zip(spec: DatasetSpec, archive: Path, staging: Path) -> None:
    try:
        with zipfile.ZipFile(archive) as zf:
            regular = {}
            for info in zf.infolist():
                check_member_name(info.filename, archive)
                mode = info.external_attr >> 16
                if stat.S_ISLNK(mode):
                    raise _unsafe_kind(archive, info.filename, "link")
                if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode):
                    raise _unsafe_kind(archive, info.filename, "device")
                if not info.is_dir():
                    regular[info.filename] = info
            for f in (*spec.files, *_present(spec.side, list(regular), archive)):
                with zf.open(regular[_pick(f, list(regular), archive)]) as src, \
                        open(staging / f.name, "wb") as out:
                    shutil.copyfileobj(src, out)
    except (zipfile.BadZipFile, EOFError, OSError) as exc:
        raise DataError(f"cannot read archive {archive} ({exc}): it is corrupt; download it "
                        f"again") from None
