"""Where atrec keeps data and results, and whether those folders can be used.

``ATREC_DATA_DIR`` and ``ATREC_RESULTS_DIR`` override the defaults ``./data`` and ``./results``
(relative to the current directory, which is the repository root under ``make``).

A folder variable that points at a file (or below one) is refused with one line naming the
variable, instead of reading as "no data" or "no results". Commands that will write check
:func:`require_writable` before any work starts, so an unwritable folder costs nothing: without
the check, ``atrec train`` would train for minutes and then fail on its first record.
"""

from __future__ import annotations

import os
from pathlib import Path

from atrec.errors import AtrecError
from atrec.runtime import settings

DATA_ENV = settings.DATA_DIR_ENV
RESULTS_ENV = settings.RESULTS_DIR_ENV


def data_dir() -> Path:
    """Root folder of downloaded and preprocessed datasets."""
    return _folder(DATA_ENV, settings.current().data_dir, "data", "data")


def results_dir() -> Path:
    """Root folder of result records, studies, tables and figures."""
    return _folder(RESULTS_ENV, settings.current().results_dir, "results", "results")


def _folder(env: str, value: str, default: str, what: str) -> Path:
    path = Path(value or default)
    blocker = _non_folder(path)
    if blocker is not None:
        raise AtrecError(f"the {what} folder {path} cannot be used: {blocker} is not a folder; "
                         f"set {env} to a folder")
    return path


def _non_folder(path: Path) -> Path | None:
    """The first of ``path`` and its ancestors that exists but is not a folder, else ``None``."""
    for candidate in [path, *path.parents]:
        if candidate.exists():
            return None if candidate.is_dir() else candidate
    return None


def require_writable(kind: str = "results") -> Path:
    """The ``kind`` (``"results"`` or ``"data"``) folder, checked to be writable; nothing is
    created. Raises :class:`AtrecError` naming the folder and its variable when it (or, while
    it does not exist yet, its nearest existing ancestor) cannot be written."""
    env, path = (RESULTS_ENV, results_dir()) if kind == "results" else (DATA_ENV, data_dir())
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    target = existing if existing.exists() else Path(".")
    if not (target.is_dir() and os.access(target, os.W_OK | os.X_OK)):
        where = "" if target == path else f" (in {target})"
        raise AtrecError(f"cannot write to the {kind} folder {path}{where}: set {env} to a "
                         f"writable folder")
    return path


def require_parent(path: Path, what: str) -> Path:
    """``path`` (a file the user named: ``--output``, a ``--storage`` database) when its folder
    exists and can be written; else one-line :class:`AtrecError` naming ``what`` and the
    folder. atrec creates no folder outside the ones it owns (data and results): a typo in a
    path would otherwise leave folders wherever it points, the filesystem root included."""
    path = Path(path)
    folder = path.parent
    if not folder.is_dir():
        why = "does not exist" if not folder.exists() else "is not a folder"
        raise AtrecError(f"{what} {path}: the folder {folder} {why}; create it first or give a "
                         f"path in an existing folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise AtrecError(f"{what} {path}: cannot write in the folder {folder}; give a path in a "
                         f"writable folder")
    return path
