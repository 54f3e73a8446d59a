"""Library pages the process no longer touches: given back to the kernel.

Importing TensorFlow maps its libraries and reads most of their code once: static initialisers
register thousands of kernels and ops, and the first compilation runs LLVM's set-up. Those
pages stay resident and count in the process's resident size (RSS) although the training loops
never run them again. Measured on 2 cores (``docs/performance.md``, "Library pages"): after
TensorFlow's import and one Coat AT fit, 394 of the process's 937 MB were pages of shared
libraries (226 MB of ``libtensorflow_cc.so`` at import alone); given back, 77 MB of them came
back in the next fit, a new loop traced and loaded included.

The kernel would drop such clean, file-backed pages under memory pressure anyway, so this
changes what the process holds, not what the machine can do; it makes the resident size, the
figure users and atrec's memory bound (:mod:`atrec.runtime.compiled`) read, say what the
process needs. A compilation reads about 0.1 GB of them again (LLVM), so a fit that makes a
new loop watches them (:class:`Steady`). :func:`give_back` asks the kernel to reclaim them
(``madvise(MADV_PAGEOUT)``, Linux 5.4 and later) for every read-only mapping of a shared
library; a page used again is read back from the file. Writable mappings are left alone (their
changed pages are not the file's).
Nothing computed changes: code is the same code wherever it is read from.

The kernel reclaims only pages no other process maps: while another TensorFlow process runs on
the machine (a second atrec run, Dask workers, a test suite), the library pages both use stay
resident in each (the machine holds them once), and the resident size of each stays about
0.3 GB higher (a Yahoo-size AT fit beside a test run: 301-359 MB of file pages, against 22-33 MB
alone).
"""

from __future__ import annotations

import ctypes
import os

MADV_PAGEOUT = 21
"""``madvise``'s advice to reclaim a range now (linux/mman.h)."""

SLACK_MB = 64.0
"""File-backed resident MB under which :func:`give_back` does not ask: a pass over the maps and
the pages read back after it cost more than so few pages are worth (after a give-back a training
process keeps about 30 MB of them)."""

_madvise = None


def _libc_madvise():
    global _madvise
    if _madvise is None:
        try:
            fn = ctypes.CDLL(None, use_errno=True).madvise
            fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
            fn.restype = ctypes.c_int
            _madvise = fn
        except (OSError, AttributeError):
            _madvise = False
    return _madvise


def library_ranges(maps_text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` address ranges of the read-only mappings of shared libraries
    (``*.so`` and ``*.so.N``) in a ``/proc/<pid>/maps`` text."""
    ranges = []
    for line in maps_text.splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) < 6 or "w" in parts[1]:
            continue
        name = os.path.basename(parts[5].strip())
        if not (name.endswith(".so") or ".so." in name):
            continue
        start, end = (int(x, 16) for x in parts[0].split("-"))
        ranges.append((start, end))
    return ranges


def file_mb() -> float:
    """This process's file-backed resident MB (``RssFile``); 0 where it cannot be read."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("RssFile:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0.0


class Steady:
    """Called often while a new loop is made (tracing, compiling: :mod:`atrec.runtime.compiled`
    calls it on each sample of its memory watch), it gives pages back each time :data:`SLACK_MB`
    more are resident than after its last give-back, so that a compilation's reads do not pile
    up, and a working set larger than that is read back at most once per ``SLACK_MB``."""

    def __init__(self) -> None:
        self.level = file_mb()

    def __call__(self) -> None:
        now = file_mb()
        if now > self.level + SLACK_MB and give_back(0.0):
            self.level = file_mb()
        elif now < self.level:
            self.level = now


def give_back(above_mb: float = SLACK_MB) -> bool:
    """Ask the kernel to reclaim the resident pages of this process's read-only library
    mappings (module doc), unless its file-backed resident size is at most ``above_mb``.
    Returns whether it asked (False also without ``/proc`` or ``madvise``, or where the kernel
    does not know ``MADV_PAGEOUT``)."""
    madvise = _libc_madvise()
    if not madvise or file_mb() <= above_mb:
        return False
    try:
        with open("/proc/self/maps") as f:
            ranges = library_ranges(f.read())
    except OSError:
        return False
    asked = False
    for start, end in ranges:
        asked |= madvise(start, end - start, MADV_PAGEOUT) == 0
    return asked
