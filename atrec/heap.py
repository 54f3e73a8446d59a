"""How many heaps glibc's ``malloc`` keeps: two, unless the user chose (``MALLOC_ARENA_MAX``).

glibc gives each new thread that allocates a heap (an *arena*) of its own, up to eight per
core, and memory freed in one arena serves only that arena. TensorFlow's pool threads and the
runner's replica threads allocate and free a training call's buffers in turn, so each arena
keeps its own high-water mark: Yahoo-size AT at dim 40 grew from 1.38 GB after its compilation
to 1.61 GB while its configurations trained, the same buffers held several times over. Two of
those configurations peak at 1.34 GB with two arenas, against 1.59 GB, no slower
(``docs/performance.md``, "Table 1 end to end"). Numbers cannot change: where a buffer lives
is not what is computed.

:func:`limit_arenas` must run before the process has threads that allocate (glibc fixes its
limit when the first extra arena is made), so ``atrec/__init__.py`` calls it first thing; where
``MALLOC_ARENA_MAX`` is set, glibc has read it already and this does nothing.
"""

from __future__ import annotations

import ctypes
import os

ARENAS = 2
"""Arenas: one per core of the 2-core reference machine (measured: 2 and 1 give the same peak)."""

_M_ARENA_MAX = -8   # mallopt's parameter number (glibc malloc.h)


def limit_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's arenas at ``arenas`` (``mallopt(M_ARENA_MAX)``) unless ``MALLOC_ARENA_MAX``
    is set. Returns whether the cap was set (False also off glibc, where there is no such
    setting)."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_ARENA_MAX, arenas))
