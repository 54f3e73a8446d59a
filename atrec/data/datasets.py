"""The dataset registry, and getting a verified raw copy of each dataset into ``data_dir()``.

Three datasets (PROTOCOL.md, "Data"; checksums from ``shared/data/SHA256SUMS`` and
``shared/data/PROVENANCE.md``):

* ``coat``: Schnabel et al. (ICML 2016), the Cornell ``coat.zip``; atrec needs ``train.ascii``
  and ``test.ascii`` (members ``coat/...``).
* ``ml-100k``: GroupLens MovieLens 100K, ``ml-100k.zip``; atrec needs ``u.data``.
* ``yahoo``: Yahoo! Webscope R3. Licensed per user, so it is never downloaded: the user requests
  it from Webscope and hands it over with ``atrec download yahoo --source PATH``.

:func:`download` fetches the official archive (or takes a local archive, folder or file), checks
the SHA-256 of every needed file, extracts only those files, refusing archives with unsafe members,
and installs them in ``data_dir()/NAME/raw/`` by renaming a fully verified staging folder, so an
interrupted or failed download never leaves a half-written copy behind.

A copy whose only difference is its line endings (CRLF versus LF) is the same data: each file
carries a second, "canonical" digest, the SHA-256 of its bytes with every CRLF replaced by LF.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import os
import re
import shutil
import stat
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import click

from atrec.errors import AtrecError, DataError
from atrec.names import DATASETS, expand
from atrec.paths import data_dir

DOWNLOAD_TIMEOUT_S = 60
ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz", ".tar")
YAHOO_TRAIN = "ydata-ymusic-rating-study-v1_0-train.txt"
YAHOO_TEST = "ydata-ymusic-rating-study-v1_0-test.txt"
WEBSCOPE_URL = "https://webscope.sandbox.yahoo.com"
WEBSCOPE_R3 = "R3 - Yahoo! Music ratings for User Selected and Randomly Selected songs"


@dataclass(frozen=True)
class FileSpec:
    """One file atrec needs from a dataset.

    ``name``: file name in ``raw/``; ``member``: its path inside the official archive;
    ``role``: ``train`` (the MNAR part) or ``test`` (the MCAR part); ``sha256``: digest of the
    official bytes; ``canonical_sha256``: digest of those bytes with CRLF replaced by LF (equal
    to ``sha256`` for files with LF endings); ``rows``: expected number of lines, checked before
    the digest for a clearer message (``None``: not checked).
    """

    name: str
    member: str
    role: str
    sha256: str
    canonical_sha256: str
    rows: int | None = None

    def __post_init__(self) -> None:
        if self.role not in ("train", "test"):
            raise ValueError(f"role must be 'train' or 'test', got {self.role!r}")
        for digest in (self.sha256, self.canonical_sha256):
            if not re.fullmatch(r"[0-9a-f]{64}", digest):
                raise ValueError(f"not a lower-case hex SHA-256 digest: {digest!r}")
        if self.rows is not None and self.rows < 0:
            raise ValueError(f"rows must be >= 0, got {self.rows}")


@dataclass(frozen=True)
class DatasetSpec:
    """A dataset of the registry: where it comes from and which verified files atrec needs.

    ``url`` is ``None`` when the dataset must be handed over by the user (Yahoo! R3).
    ``archive_sha256`` documents the official archive (informative; every needed file is
    verified on its own). ``licence`` is repeated to the user after a successful download.
    """

    name: str
    title: str
    url: str | None
    archive_sha256: str | None
    files: tuple[FileSpec, ...]
    licence: str

    def __post_init__(self) -> None:
        if not self.files:
            raise ValueError(f"dataset {self.name!r} must list at least one file")


REGISTRY: dict[str, DatasetSpec] = {
    "coat": DatasetSpec(
        name="coat",
        title="Coat (Schnabel et al., ICML 2016)",
        url="https://www.cs.cornell.edu/~schnabts/mnar/coat.zip",
        # coat.zip as measured in shared/data/PROVENANCE.md (537,499 bytes).
        archive_sha256="6073d0b515ed1f6e830e4fead66dc76ad7991a7553eaa58e228b234a9d19daed",
        files=(
            # sha256 from shared/data/SHA256SUMS (CRLF endings); canonical_sha256 computed once
            # from the shared copies with every CRLF replaced by LF.
            FileSpec("train.ascii", "coat/train.ascii", "train",
                     "a87bd9e7eaf3b89f976df3f25d4aa5d5d871be8a00b58947df9e6e015559bd37",
                     "f9088c6e95fa9a42e8be6a92fc77252b95b969e34ed1299c611420da68680873",
                     rows=290),
            FileSpec("test.ascii", "coat/test.ascii", "test",
                     "de6714ab105a5e0be8166be7fd313901b29f9a09c3bea307901457d1d71847e6",
                     "51fa28550f5bedebc6959d0e7b5e242b173c3c8d16317c7e49b89441304504ce",
                     rows=290),
        ),
        licence="Coat ships without a licence file; cite Schnabel et al. (ICML 2016).",
    ),
    "ml-100k": DatasetSpec(
        name="ml-100k",
        title="MovieLens 100K (GroupLens)",
        url="https://files.grouplens.org/datasets/movielens/ml-100k.zip",
        archive_sha256=None,
        files=(
            # shared/data/SHA256SUMS; the file has LF endings, so both digests are equal.
            FileSpec("u.data", "ml-100k/u.data", "train",
                     "06416e597f82b7342361e41163890c81036900f418ad91315590814211dca490",
                     "06416e597f82b7342361e41163890c81036900f418ad91315590814211dca490",
                     rows=100_000),
        ),
        licence="MovieLens 100K is for research use only; do not redistribute it "
                "(GroupLens README).",
    ),
    "yahoo": DatasetSpec(
        name="yahoo",
        title="Yahoo! R3 (Webscope ydata-ymusic-rating-study-v1_0)",
        url=None,
        # One copy of the Webscope .tgz (shared/data/PROVENANCE.md); its name varies.
        archive_sha256="403c4014248c7200b7a5e20c9f9b904584f4f921b07a16a198d94ecfc8c0c13e",
        files=(
            # shared/data/PROVENANCE.md; LF endings, so both digests are equal.
            FileSpec(YAHOO_TRAIN, f"./{YAHOO_TRAIN}", "train",
                     "85538b3c4a93eafc4f0ce2d39a6cd178e32a6b615ce775b9d635f7995706269d",
                     "85538b3c4a93eafc4f0ce2d39a6cd178e32a6b615ce775b9d635f7995706269d",
                     rows=311_704),
            FileSpec(YAHOO_TEST, f"./{YAHOO_TEST}", "test",
                     "f27a73bef8c7ccedb17576fe2d4cc52b80c2d5fa60f13529596f003ffd0d8533",
                     "f27a73bef8c7ccedb17576fe2d4cc52b80c2d5fa60f13529596f003ffd0d8533",
                     rows=54_000),
        ),
        licence="Yahoo! R3 is licensed to you alone under the Webscope Data Sharing Agreement: "
                "do not redistribute it, post it or commit it anywhere.",
    ),
}

# ``atrec download all`` / ``atrec preprocess all``: the datasets anyone can download.
PUBLIC = ("coat", "ml-100k")


@dataclass(frozen=True)
class DownloadResult:
    """What :func:`download` did: the ``raw`` folder, the verified files in it, and a
    one-paragraph ``message`` for the CLI. ``cached`` is True when nothing had to be fetched."""

    name: str
    folder: Path
    files: tuple[Path, ...]
    message: str
    cached: bool


def get_spec(name: str) -> DatasetSpec:
    """The registry entry of ``name``; an unknown name raises :class:`AtrecError` listing them."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise AtrecError(
            f"unknown dataset '{name}': choose from {', '.join(DATASETS)}"
        ) from None


def resolve_names(name: str) -> list[str]:
    """Dataset names of a NAME argument: one name, a comma-separated list, or ``all``.

    ``all`` means the public datasets (coat, ml-100k), plus yahoo when a raw copy of it is
    already installed (it can only be handed over by hand).
    """
    parts = [p.strip().lower() for p in str(name).split(",")]
    if "all" in parts:
        parts = [p for p in parts if p != "all"] + list(PUBLIC) + \
            [n for n in DATASETS if n not in PUBLIC and raw_present(n)]
    return expand(parts, DATASETS, "dataset")


def raw_dir(name: str) -> Path:
    """``data_dir()/NAME/raw``: where the verified source files live."""
    return data_dir() / name / "raw"


def raw_present(name: str) -> bool:
    """True when every file ``name`` needs is in its raw folder (not checked for integrity)."""
    folder = raw_dir(name)
    return all((folder / f.name).is_file() for f in get_spec(name).files)


def sha256_hex(data: bytes) -> str:
    """SHA-256 of ``data`` as lower-case hex."""
    return hashlib.sha256(data).hexdigest()


def read_bytes(path: Path) -> bytes:
    """The bytes of a dataset file; a missing or unreadable file is a one-line DataError."""
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise DataError(f"{path} is missing: run 'atrec download' for its dataset (--force "
                        f"fetches it again)") from None
    except OSError as exc:
        raise DataError(f"cannot read {path} ({exc.strerror}): check its permissions") from None


def verify_file(path: Path, spec: FileSpec, label: str | None = None) -> str:
    """Check ``path`` against ``spec``; return the SHA-256 of its bytes as they are.

    Passes when the bytes match the official digest, or when they match it once CRLF line
    endings are replaced by LF. Raises :class:`DataError` otherwise (or when ``spec.rows`` is
    set and the line count differs), naming the file as ``label`` (default: its path).
    """
    data = read_bytes(path)
    label = label or str(path)
    if spec.rows is not None:
        rows = sum(1 for line in data.splitlines() if line.strip())
        if rows != spec.rows:
            raise DataError(
                f"{label} has {rows:,} rows, expected {spec.rows:,}: it is truncated or not the "
                f"official {spec.name}; use the original file"
            )
    digest = sha256_hex(data)
    if digest != spec.sha256 and sha256_hex(data.replace(b"\r\n", b"\n")) != spec.canonical_sha256:
        raise DataError(
            f"{label} fails its checksum (sha256 {digest[:16]}..., expected {spec.sha256[:16]}...):"
            f" it is corrupt or another version of {spec.name}; use the official file"
        )
    return digest


class _SilentBar:
    """Stands in for a click progress bar when nothing should be drawn."""

    def __enter__(self) -> "_SilentBar":
        return self

    def __exit__(self, *exc) -> None:
        return None

    def update(self, n_steps: int) -> None:
        return None


def progress_bar(length: int | None, label: str, quiet: bool = False):
    """A click progress bar over ``length`` steps, silent when ``quiet`` or when standard output
    is not a terminal (so scripts and logs stay clean). Use as a context manager with
    ``update(n)``."""
    if quiet or not sys.stdout.isatty():
        return _SilentBar()
    return click.progressbar(length=length, label=label, file=sys.stderr)


def yahoo_instructions() -> str:
    """How to obtain Yahoo! R3 and hand it to atrec (a few lines)."""
    return (
        "Yahoo! R3 cannot be downloaded automatically: its licence requires every user to "
        "request it.\n"
        f"  1. Request the dataset \"{WEBSCOPE_R3}\" at {WEBSCOPE_URL} and accept the Webscope "
        "Data Sharing Agreement.\n"
        "  2. Hand it over: atrec download yahoo --source PATH, where PATH is the archive you "
        f"received or a folder holding {YAHOO_TRAIN} and {YAHOO_TEST}."
    )


def source_env(name: str) -> str:
    """The environment variable naming a local copy of ``name`` (``ATREC_COAT_SOURCE``, ...)."""
    return "ATREC_" + name.upper().replace("-", "_") + "_SOURCE"


def download(name: str, source: str | Path | None = None, quiet: bool = False,
             force: bool = False) -> DownloadResult:
    """Install a verified raw copy of dataset ``name`` in ``data_dir()/NAME/raw``.

    ``source``: ``None`` to fetch the official URL, or a local archive (.zip, .tar.gz, .tgz,
    .tar), a folder, or a single file. Yahoo! R3 needs ``source``. Does nothing when a valid
    copy is already installed, unless ``force``. Raises :class:`AtrecError` / :class:`DataError`
    with one line for every failure (network, checksum, unsafe archive, unwritable folder).
    """
    spec = get_spec(name)
    raw = raw_dir(name)
    if not force and _cached_ok(spec, raw):
        return DownloadResult(
            name, raw, tuple(raw / f.name for f in spec.files),
            f"{name}: a verified copy is already in {raw}; nothing to do "
            f"(use --force to fetch it again).",
            cached=True,
        )
    if source is None and spec.url is None:
        raise DataError(yahoo_instructions())
    parent = _writable_dir(data_dir() / name)
    staging = Path(tempfile.mkdtemp(prefix=".raw-staging-", dir=parent))
    try:
        if source is None:
            origin = spec.url
            archive = staging / ("download" + _suffix(spec.url))
            _fetch(spec.url, archive, quiet, name)
            _stage_from_archive(spec, archive, staging)
            archive.unlink()
        else:
            origin = str(source)
            _stage_from_source(spec, Path(source), staging)
        for f in spec.files:
            verify_file(staging / f.name, f, label=f"{f.name} from {origin}")
        _install(staging, raw)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    files = tuple(raw / f.name for f in spec.files)
    names = ", ".join(f.name for f in spec.files)
    message = (
        f"{name}: verified {len(files)} file(s) ({names}) from {origin} against their SHA-256 "
        f"and stored them in {raw}. {spec.licence} Next: atrec preprocess {name}."
    )
    return DownloadResult(name, raw, files, message, cached=False)


def download_many(name: str, source: str | Path | None = None, quiet: bool = False,
                  force: bool = False) -> list[DownloadResult]:
    """:func:`download` every dataset a NAME argument names (:func:`resolve_names`).

    ``source`` serves one dataset only, so it is refused when NAME names several.
    """
    names = resolve_names(name)
    if source is not None and len(names) > 1:
        raise AtrecError(f"--source gives one dataset, but '{name}' names {', '.join(names)}: "
                         f"download them one at a time")
    return [download(n, source=source, quiet=quiet, force=force) for n in names]


def _cached_ok(spec: DatasetSpec, raw: Path) -> bool:
    try:
        for f in spec.files:
            verify_file(raw / f.name, f)
    except DataError:
        return False
    return True


def _writable_dir(path: Path) -> Path:
    """Create ``path`` if needed and make sure files can be written in it."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=path, prefix=".probe-")
        probe.close()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise AtrecError(
            f"cannot write to the data folder {path} ({reason}): set ATREC_DATA_DIR to a "
            f"writable folder"
        ) from None
    return path


def _suffix(location: str) -> str:
    lower = location.lower()
    for suffix in ARCHIVE_SUFFIXES:
        if lower.endswith(suffix):
            return suffix
    return ".zip"


def _fetch(url: str, dest: Path, quiet: bool, name: str) -> None:
    """Stream ``url`` into ``dest`` with a progress bar; one-line error on any failure."""
    try:
        with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as resp, \
                open(dest, "wb") as out:
            length = int(resp.headers.get("Content-Length") or 0) or None
            with progress_bar(length, f"downloading {name}", quiet) as bar:
                while chunk := resp.read(1 << 16):
                    out.write(chunk)
                    bar.update(len(chunk))
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise DataError(
            f"could not download {name} from {url} ({reason}): check the network, or fetch the "
            f"file another way and install it with 'atrec download {name} --source PATH'"
        ) from None


def _stage_from_source(spec: DatasetSpec, source: Path, staging: Path) -> None:
    """Copy the needed files from a local folder, archive or single file into ``staging``."""
    if not source.exists():
        raise DataError(f"source {source} does not exist: give an existing archive, folder or file")
    if source.is_dir():
        candidates = {p.relative_to(source).as_posix(): p
                      for p in sorted(source.rglob("*")) if p.is_file()}
        for f in spec.files:
            shutil.copyfile(candidates[_pick(f, list(candidates), source)], staging / f.name)
    elif source.name.lower().endswith(ARCHIVE_SUFFIXES):
        _stage_from_archive(spec, source, staging)
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


def _stage_from_archive(spec: DatasetSpec, archive: Path, staging: Path) -> None:
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
            for f in spec.files:
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
            for f in spec.files:
                with zf.open(regular[_pick(f, list(regular), archive)]) as src, \
                        open(staging / f.name, "wb") as out:
                    shutil.copyfileobj(src, out)
    except (zipfile.BadZipFile, EOFError, OSError) as exc:
        raise DataError(f"cannot read archive {archive} ({exc}): it is corrupt; download it "
                        f"again") from None


def _install(staging: Path, raw: Path) -> None:
    """Swap the verified ``staging`` folder in as ``raw`` (each step is a rename)."""
    old = None
    if raw.exists():
        old = staging.with_name(staging.name.replace("staging", "old"))
        os.replace(raw, old)
    os.replace(staging, raw)
    if old is not None:
        with contextlib.suppress(OSError):
            shutil.rmtree(old)
