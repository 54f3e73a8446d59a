"""How the process keeps its memory: glibc's heaps and TensorFlow's CPU allocator.

Two settings, each read once at start-up, so :func:`atrec.runtime.configure` applies them first
thing. Neither changes a number atrec computes (where a buffer lives is not what is computed),
but see below for TensorFlow's op-by-op kernels.

**glibc's heaps: two, unless the user chose** (``MALLOC_ARENA_MAX``). glibc gives each new thread
that allocates a heap (an *arena*) of its own, up to eight per core, and memory freed in one
arena serves only that arena. TensorFlow's pool threads and the runner's replica threads
allocate and free a training call's buffers in turn, so each arena keeps its own high-water
mark: Yahoo-size AT at dim 40 grew from 1.38 GB after its compilation to 1.61 GB while its
configurations trained, the same buffers held several times over. Two of those configurations
peak at 1.34 GB with two arenas, against 1.59 GB, no slower (``docs/performance.md``, "Table 1
end to end"). :func:`limit_arenas` must run before the process has threads that allocate (glibc
fixes its limit when the first extra arena is made); where ``MALLOC_ARENA_MAX`` is set, glibc
has read it already and this does nothing.

**TensorFlow's CPU allocator: plain, unless the user chose** (``TF_ENABLE_ONEDNN_OPTS``). With
oneDNN's options on, TensorFlow's default on x86, the CPU device allocates through a pool
("mklcpu", a BFC allocator) that grows by doubling and never gives memory back. Every buffer
table of an XLA loop call lands there: after one Yahoo-size AT configuration the pool held
251 MB (heaptrack: 201 MB of buffer tables of two concurrent calls, 50 MB of tensors), for the
life of the process. With the options off, a tensor is an aligned ``malloc``, returned when it
is dropped. atrec's arithmetic runs inside XLA-compiled loops, which this switch does not
change: Table 1's 480 records (Coat and Yahoo-size), Coat's baselines, the variance experiment
and Coat's tuning are bit-identical either way (``docs/performance.md``, "TensorFlow's CPU
allocator"). TensorFlow's op-by-op (eager) kernels are another matter: with the options off
they may round differently, and a replica's mean ``|A1 - A2|`` computed eagerly in a stack of
four differed from the same replica's alone in its last bit, so code outside a compiled loop,
a plug-in's for instance, may see last-bit differences.
:func:`plain_tensorflow_allocator` must run before TensorFlow is imported, which reads the
variable once.
"""

from __future__ import annotations

import ctypes
import os

ARENAS = 2
"""Arenas: one per core of the 2-core reference machine (measured: 2 and 1 give the same peak)."""

_M_ARENA_MAX = -8   # mallopt's parameter number (glibc malloc.h)

ONEDNN_ENV = "TF_ENABLE_ONEDNN_OPTS"


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


def plain_tensorflow_allocator() -> bool:
    """Turn TensorFlow's oneDNN options off (``TF_ENABLE_ONEDNN_OPTS=0``), so that its CPU
    device allocates without a pool that never shrinks (module doc), unless the user set the
    variable. Returns whether it was set here."""
    if ONEDNN_ENV in os.environ:
        return False
    os.environ[ONEDNN_ENV] = "0"
    return True
