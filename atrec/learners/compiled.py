"""The compiled training loops this process holds, and a bound on the memory they keep.

Every XLA compilation of a loop (a new ``dim``, a new shape) keeps memory resident in the
process for as long as TensorFlow's eager context lives: about 20 MB for MF-IPS on Coat, 100 MB
for AT on Coat and 300 MB for AT at Yahoo's size, in TensorFlow's and XLA's own caches.
Dropping atrec's references to the loops frees none of it. A tuning run visits every ``dim`` of
every study, so one process piled up gigabytes (``atrec variance --tune``: 7.4 GB).

What frees it: dropping the loops (the caches of :func:`loop_cache`) and resetting
TensorFlow's eager context, whose device owns the compilation cache. :func:`before_fit` does
that before a fit that needs a loop this process has not compiled since the last release,
when the process's resident memory is above :func:`bound_mb`, and :func:`retire` does it when
a planned run will not need the loops it holds again. The next fit of a released shape
traces it again and loads it from the compilation cache on disk
(:mod:`atrec.learners.compilecache`), or compiles it where the cache is off: the same code
either way, so the same numbers (``tests/learners/test_compiled.py``).
Measured on 2 cores (``docs/performance.md``, "Memory of long runs").

Tensors and loops made before a release keep working (they hold the old context); a plug-in
that caches its own ``tf.function`` objects keeps their memory until it drops them, and may
register its cache with :func:`loop_cache` to have them dropped too.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import os
import threading

from atrec.errors import AtrecError
from atrec.learners import compilecache, tracebacks

BOUND_MB = 2500
"""Above this resident size (MB), a fit that needs a new compiled loop first releases the
others; the process then peaks at about this plus one compilation (100-400 MB).

A trade of memory for time, measured on Coat's whole tuning (``docs/performance.md``): the
loops a release drops are made again when a trial needs them (AT on Coat: about 7.4 s to
compile, 3.8 s to trace and load from the compilation cache on disk), so a low bound pays that
often. 2,500 MB releases nothing in a Coat tuning (1.95 GB) and
stops the runs that piled up loops: ``atrec reproduce --tune`` on Coat, ML-100K and Yahoo-size
data peaked at 2.72 GB (its variance tuning alone had reached 7.4 GB), the Yahoo-size studies of
``bench_tune.py`` at 2.56 GB (a Yahoo-size tuning had reached 12.5 GB).
``ATREC_MEMORY_BOUND_MB=1500`` keeps a Coat tuning at 1.60 GB, 2.9 times slower, and ``1000``
at 1.14 GB, 5.1 times slower. Planned runs
(``atrec train``) release at no cost instead, family by family (:func:`retire`)."""

BOUND_ENV = "ATREC_MEMORY_BOUND_MB"

_caches: list = []
_lock = threading.Lock()
_active = 0             # fits running now (a release waits for none to be running)
_keys: set = set()      # shapes compiled since the last release
releases = 0            # how many times this process released its loops (for reports)


def loop_cache(factory):
    """``functools.cache`` for a function that builds compiled loops, registered so that
    :func:`release` empties it. The loops it returns trace with stable names, so that the
    compilation cache on disk finds them again (:mod:`atrec.learners.compilecache`), and
    without Python stack traces on their operations (:mod:`atrec.learners.tracebacks`)."""
    @functools.cache
    def cached(*args, **kwargs):
        loop = compilecache.stable(factory(*args, **kwargs), factory, args, kwargs)
        return tracebacks.without(loop)

    functools.update_wrapper(cached, factory)
    _caches.append(cached)
    return cached


def bound_mb() -> float:
    """:data:`BOUND_MB`, or ``ATREC_MEMORY_BOUND_MB`` (a positive number; ``0``: no bound)."""
    text = os.environ.get(BOUND_ENV, "").strip()
    if not text:
        return BOUND_MB
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise AtrecError(f"{BOUND_ENV}={text}: give the memory bound in MB (e.g. {BOUND_MB}), "
                         f"or 0 for none")
    return value


def rss_mb() -> float:
    """This process's resident size now (``VmRSS`` of ``/proc/self/status``) in MB; 0 where
    it cannot be read (no ``/proc``), so that the bound then never releases anything."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def release() -> None:
    """Drop every registered loop cache and TensorFlow's eager context (with its compilation
    cache), then give freed heap back to the system."""
    global releases
    from tensorflow.python.eager import context

    for cache in _caches:
        cache.cache_clear()
    gc.collect()
    context._reset_context()     # a fresh context: the old one, and its compiled code, go
    compilecache.forget()
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    _keys.clear()
    releases += 1


def retire() -> bool:
    """Release the loops held now because the caller will not need them again (a planned run
    that moved on to other shapes for good: :func:`atrec.experiments.driver.train_plans`),
    whatever the process's size, so that such a run holds one family of loops at a time and
    pays no compilation for it. Not with ``ATREC_MEMORY_BOUND_MB=0`` (keep every loop), nor
    while a fit runs or with nothing held. Returns whether it released."""
    with _lock:
        if _active or not _keys or not bound_mb():
            return False
        release()
        return True


def in_families(items, family) -> list:
    """``items`` with those of equal ``family(item)`` together, families in the order of their
    first item, items in their order within a family: the order in which a planned run
    (training, tuning) compiles each loop once and can :func:`retire` a family when it is done."""
    keys = [family(item) for item in items]
    first: dict = {}
    for key in keys:
        first.setdefault(key, len(first))
    order = sorted(range(len(keys)), key=lambda n: first[keys[n]])
    return [items[n] for n in order]


class _Fit:
    def __init__(self, key) -> None:
        self.key = key

    def __enter__(self):
        global _active
        with _lock:
            bound = bound_mb()
            if (bound and _active == 0 and self.key not in _keys and _keys
                    and rss_mb() > bound):
                release()
            _keys.add(self.key)
            _active += 1
        return self

    def __exit__(self, *exc) -> None:
        global _active
        with _lock:
            _active -= 1


def before_fit(key) -> _Fit:
    """A context manager around one fit that needs the compiled loops named by ``key`` (any
    hashable naming their shapes: what changes the compiled code, e.g. method, ``dim``, table
    sizes). Entering it releases the loops first (:func:`release`) when ``key`` is new since
    the last release, the process is above :func:`bound_mb` and no other fit is running."""
    return _Fit(key)
