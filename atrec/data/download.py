"""Getting a verified raw copy of a dataset into ``data_dir()/NAME/raw/``.

:func:`download` fetches the official archive (or takes a local archive, folder or file), checks
the SHA-256 of every needed file, extracts only those files, refusing archives with unsafe members,
and installs them in ``data_dir()/NAME/raw/`` by renaming a fully verified staging folder, so an
interrupted or failed download never leaves a half-written copy behind.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import shutil
import sys
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import click

from atrec.data.catalogue import DatasetSpec, get_spec, raw_dir, resolve_names, yahoo_instructions
from atrec.data.integrity import verify_file
from atrec.data.sources import ARCHIVE_SUFFIXES, stage_from_archive, stage_from_source
from atrec.errors import AtrecError, DataError
from atrec.fileio import make_folder, temp_folder
from atrec.paths import data_dir
from atrec.runtime import settings
from atrec.runtime.settings import source_env  # noqa: F401  (re-exported)

DOWNLOAD_TIMEOUT_S = 60


@dataclass(frozen=True)
class DownloadResult:
    """What :func:`download` did: the ``raw`` folder, the verified files in it, and a
    one-paragraph ``message`` for the CLI. ``cached`` is True when nothing had to be fetched."""

    name: str
    folder: Path
    files: tuple[Path, ...]
    message: str
    cached: bool


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


def download(name: str, source: str | Path | None = None, quiet: bool = False,
             force: bool = False) -> DownloadResult:
    """Install a verified raw copy of dataset ``name`` in ``data_dir()/NAME/raw``.

    ``source``: ``None`` to fetch the official URL, or a local archive (.zip, .tar.gz, .tgz,
    .tar), a folder, or a single file. Side files (features, shipped propensities) are
    installed and verified when the source holds them. Yahoo! R3 needs ``source``. Does nothing when a valid
    copy is already installed, unless ``force``. Raises :class:`AtrecError` / :class:`DataError`
    with one line for every failure (network, checksum, unsafe archive, unwritable folder).
    """
    spec = get_spec(name)
    raw = raw_dir(name)
    if not force and _cached_ok(spec, raw):
        checked = ""
        if source is not None:
            # a bad --source is refused even though it would not be used
            with tempfile.TemporaryDirectory(prefix="atrec-source-check-") as scratch:
                _stage_verified(spec, Path(source), Path(scratch), str(source))
            checked = f"; {source} holds the same verified files"
        return DownloadResult(
            name, raw, tuple(raw / f.name for f in (*spec.files, *spec.side)
                             if (raw / f.name).is_file()),
            f"{name}: a verified copy is already in {raw}{checked}; nothing to do "
            f"(use --force to install it again).",
            cached=True,
        )
    if source is None and spec.url is None:
        raise DataError(yahoo_instructions())
    if source is not None and not Path(source).exists():
        raise DataError(f"source {source} does not exist: give an existing archive, folder or "
                        f"file")
    created = [d for d in (data_dir(), data_dir() / name) if not d.exists()]
    parent = _writable_dir(data_dir() / name)
    try:
        return _download_into(spec, raw, parent, source, quiet)
    except BaseException:
        for folder in reversed(created):  # a failed download leaves no empty folders behind
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise


def _stage_verified(spec: DatasetSpec, source: Path, staging: Path, origin: str) -> None:
    """Copy ``spec``'s files from a local ``source`` into ``staging`` and verify each."""
    stage_from_source(spec, source, staging)
    _verify_staged(spec, staging, origin)


def _verify_staged(spec: DatasetSpec, staging: Path, origin: str) -> None:
    """Verify the rating files and whichever side files (features, shipped propensities) the
    source held: those are optional, but a present one must be the published file."""
    for f in (*spec.files, *(f for f in spec.side if (staging / f.name).is_file())):
        verify_file(staging / f.name, f, label=f"{f.name} from {origin}")


def _download_into(spec: DatasetSpec, raw: Path, parent: Path, source, quiet: bool):
    name = spec.name
    staging = temp_folder(parent, ".raw-staging-")  # renamed into place: umask modes
    try:
        if source is None:
            origin = spec.url
            archive = staging / ("download" + _suffix(spec.url))
            _fetch(spec.url, archive, quiet, name)
            stage_from_archive(spec, archive, staging)
            archive.unlink()
            _verify_staged(spec, staging, origin)
        else:
            origin = str(source)
            _stage_verified(spec, Path(source), staging, origin)
        _install(staging, raw)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    files = tuple(raw / f.name for f in (*spec.files, *spec.side) if (raw / f.name).is_file())
    names = ", ".join(p.name for p in files)
    message = (
        f"{name}: verified {len(files)} file(s) ({names}) from {origin} against their SHA-256 "
        f"and stored them in {raw}. {spec.licence} Next: atrec preprocess {name}."
    )
    return DownloadResult(name, raw, files, message, cached=False)


def env_source(name: str) -> str | None:
    """The local copy of ``name`` that ``ATREC_<NAME>_SOURCE`` names, or ``None`` when unset."""
    return settings.current().source(name)


def download_from_env(name: str, quiet: bool = False, force: bool = False) -> DownloadResult:
    """:func:`download` ``name`` from ``ATREC_<NAME>_SOURCE`` (else the official URL); a failure
    names the variable and the dataset, since the user typed neither on this command line."""
    source = env_source(name)
    try:
        return download(name, source=source, quiet=quiet, force=force)
    except AtrecError as exc:
        if source is None:
            raise
        raise AtrecError(f"{source_env(name)}={source} (the local copy of {name}): {exc}; fix "
                         f"or unset {source_env(name)}", exc.exit_code) from None


def download_many(name: str, source: str | Path | None = None, quiet: bool = False,
                  force: bool = False) -> list[DownloadResult]:
    """:func:`download` every dataset a NAME argument names (:func:`resolve_names`).

    ``source`` serves one dataset only, so it is refused when NAME names several. Without it,
    each dataset comes from the local copy its ``ATREC_<NAME>_SOURCE`` names, as
    ``make reproduce``, ``atrec run`` and the tests take it, else from the official URL.
    """
    names = resolve_names(name)
    if source is not None and len(names) > 1:
        raise AtrecError(f"--source gives one dataset, but '{name}' names {', '.join(names)}: "
                         f"download them one at a time")
    if source is None:
        return [download_from_env(n, quiet=quiet, force=force) for n in names]
    return [download(n, source=source, quiet=quiet, force=force) for n in names]


def _cached_ok(spec: DatasetSpec, raw: Path) -> bool:
    """Every rating file verifies, and so does every side file that is installed."""
    try:
        for f in spec.files:
            verify_file(raw / f.name, f)
        for f in spec.side:
            if (raw / f.name).exists():
                verify_file(raw / f.name, f)
    except DataError:
        return False
    return True


def _writable_dir(path: Path) -> Path:
    """Create ``path`` if needed and make sure files can be written in it."""
    try:
        make_folder(path)
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
