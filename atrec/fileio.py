"""Every file and folder atrec writes goes through here, so all outputs get the user's umask.

Why: outputs are written atomically (a temporary file in the same folder, then a rename), and
:func:`tempfile.mkstemp` / :func:`tempfile.mkdtemp` create ``0600`` files and ``0700`` folders
whatever the umask. A record, report or figure written that way could not be read by the rest
of a group even when the user's umask (``022``, ``002``) says it should. So, as any tool does,
files get ``0666 & ~umask`` and folders ``0777 & ~umask``: the temporary file is ``chmod``-ed
before its rename, a temporary folder before it is renamed into place.

Reading the umask: the only portable call, :func:`os.umask`, *sets* it; setting it to 0 and
back is a race in a threaded process (another thread's file would be created 0666 meanwhile).
So the umask is read from ``/proc/self/status`` (``Umask:`` line, Linux 4.7 and later) on every
use, which is thread-safe and follows later changes; where that is not available it is read
once, at import (while atrec is being imported no atrec thread writes anything), with the
``os.umask`` set-and-restore.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def _proc_umask() -> int | None:
    """The process umask from ``/proc/self/status``; ``None`` where it cannot be read."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        return None
    return None


def _import_time_umask() -> int:
    value = os.umask(0o022)
    os.umask(value)
    return value


_FALLBACK_UMASK = _import_time_umask() if _proc_umask() is None else None


def current_umask() -> int:
    """The user's umask (see the module doc for how it is read safely)."""
    value = _proc_umask()
    if value is not None:
        return value
    return _FALLBACK_UMASK if _FALLBACK_UMASK is not None else 0o022


def file_mode() -> int:
    """The mode of a new file: ``0666 & ~umask`` (``0644`` under umask 022)."""
    return 0o666 & ~current_umask()


def folder_mode() -> int:
    """The mode of a new folder: ``0777 & ~umask`` (``0755`` under umask 022)."""
    return 0o777 & ~current_umask()


def make_folder(path: Path) -> Path:
    """Create ``path`` and its missing parents (modes from the umask, as ``mkdir -p``)."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    return path


def temp_folder(parent: Path, prefix: str) -> Path:
    """A new temporary folder in ``parent`` with the umask's folder mode (not ``mkdtemp``'s
    ``0700``), for staging a folder that is later renamed into place."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    os.chmod(path, folder_mode())
    return path


def atomic_write(path: Path, write: Callable[[str], None]) -> Path:
    """Write ``path`` atomically: ``write(tmp)`` fills a temporary file beside it, which gets
    the umask's file mode and is then renamed over ``path``. A failure leaves no temporary file
    and the old ``path`` (if any) untouched. Missing parent folders are created."""
    path = Path(path)
    make_folder(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        os.chmod(tmp, file_mode())
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_bytes(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (:func:`atomic_write`), synced to disk before the
    rename so that a crash leaves the old file or the new one, never a torn one."""

    def write(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())

    return atomic_write(path, write)


def atomic_write_text(path: Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return atomic_write_bytes(path, text.encode("utf-8"))
