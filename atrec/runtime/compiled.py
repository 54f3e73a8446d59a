"""The compiled training loops this process holds, and a bound on the memory they keep.

Every XLA compilation of a loop (a new ``dim``, a new shape) keeps memory resident in the
process for as long as TensorFlow's eager context lives: about 15 MB for MF-IPS, 50-65 MB for
AT on Coat and 60-120 MB for AT at Yahoo's size, in TensorFlow's and XLA's own caches.
Dropping atrec's references to the loops frees none of it. A tuning run visits every ``dim`` of
every study, so one process piled up gigabytes (``atrec variance --tune``: 7.4 GB).

What frees it: dropping the loops (the caches of :func:`loop_cache`) and resetting
TensorFlow's eager context, whose device owns the compilation cache. :func:`before_fit` does
that before a fit that needs a loop this process has not compiled since the last release,
when the fit could take the process above :func:`bound_mb`: its resident size now plus
what the last such fit of its kind kept and the most a fit of its kind went above where it
ended (:mod:`atrec.runtime.memwatch` samples each fit's peak). :func:`retire` does it when a
planned run will not need the loops it holds again. The next fit of a released shape traces
it again and loads it from the compilation cache on disk (:mod:`atrec.runtime.compilecache`),
or compiles it where the cache is off: the same code either way, so the same numbers
(``tests/learners/test_compiled.py``).
Measured on 2 cores (``docs/performance.md``, "Memory of long runs").

The library pages that importing TensorFlow, tracing and compiling read, and the loops do not
run, are given back (:mod:`atrec.runtime.libpages`) before the process's first fit, while a fit
makes a new loop (each time :data:`atrec.runtime.libpages.SLACK_MB` more were read: a
compilation reads about 0.1 GB) and after it, under the same switch
(``ATREC_MEMORY_BOUND_MB=0`` keeps them).

Tensors and loops made before a release keep working (they hold the old context); a plug-in
that caches its own ``tf.function`` objects keeps their memory until it drops them, and may
register its cache with :func:`loop_cache` to have them dropped too.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import threading

from atrec.errors import AtrecError
from atrec.runtime import compilecache, libpages, memwatch, settings, tracebacks
from atrec.runtime.tfquiet import import_tensorflow

BOUND_MB = 1500
"""The peak resident size (MB) a process should stay under: a fit that needs a new compiled
loop first releases the others when its resident size now plus the rise expected of it
(:func:`expected_rise`: the loop it keeps, its buffers, a compilation) would pass this. A
target, not a guarantee: a rise not seen yet, or one fit larger than the bound, still goes
above it.

A trade of memory for time (``docs/performance.md``, "Memory of long runs"): the loops a
release drops are made again when a fit needs them (an AT loop on Coat: about 3.8 s to trace
and load from the compilation cache on disk, 7.4 s to compile), so a low bound pays that often.
1,500 MB is issue 15's bound for long runs; a Coat tuning stays under it without a release
(1.45 GB), a Yahoo-size AT study releases when it holds about seven AT loops (1.46 GB).
Planned runs (``atrec train``) release at no cost instead, family by family (:func:`retire`)."""

BOUND_ENV = settings.MEMORY_BOUND_ENV

_caches: list = []
_lock = threading.Lock()
_active = 0             # fits running now (a release waits for none to be running)
_keys: set = set()      # shapes compiled since the last release
_grows: dict = {}       # kind of fit -> MB its last fit of a new shape kept (the loop held)
_overs: dict = {}       # kind of fit -> the most MB a fit of it went above where it ended
_entered = 0            # fits entered so far (tells whether a fit ran alone)
releases = 0            # how many times this process released its loops (for reports)


def loop_cache(factory):
    """``functools.cache`` for a function that builds compiled loops, registered so that
    :func:`release` empties it. The loops it returns trace with stable names, so that the
    compilation cache on disk finds them again (:mod:`atrec.runtime.compilecache`), and
    without Python stack traces on their operations (:mod:`atrec.runtime.tracebacks`)."""
    @functools.cache
    def cached(*args, **kwargs):
        loop = compilecache.stable(factory(*args, **kwargs), factory, args, kwargs)
        return tracebacks.without(loop)

    functools.update_wrapper(cached, factory)
    _caches.append(cached)
    return cached


rss_mb = memwatch.rss_mb


def bound_mb() -> float:
    """:data:`BOUND_MB`, or ``ATREC_MEMORY_BOUND_MB`` (a positive number; ``0``: no bound)."""
    text = settings.current().memory_bound
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


def release() -> None:
    """Drop every registered loop cache and TensorFlow's eager context (with its compilation
    cache), then give freed heap back to the system."""
    global releases
    from tensorflow.python.eager import context  # TensorFlow: loaded by the first fit only

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


def expected_rise(kind) -> float:
    """How far (MB) a fit of ``kind`` that needs a new loop is expected to take the process
    above where it starts: what the last such fit of ``kind`` kept (its loop; not the first fit
    of the process, which also keeps TensorFlow's start and first use) plus the most a fit of
    ``kind`` went above where it ended (buffers, a compilation). For a kind not seen yet, the
    largest of the kinds seen (0 before any)."""
    if kind in _grows or kind in _overs:
        return _grows.get(kind, 0.0) + _overs.get(kind, 0.0)
    return max((expected_rise(k) for k in set(_grows) | set(_overs)), default=0.0)


def _learn(kind, new: bool, watch: memwatch.Peak, end: float) -> None:
    """Learn from a fit that ran alone, ``end`` MB resident when it returned: how far it went
    above that, and, if it made a new loop, what it kept (read now, after the library pages it
    read were given back)."""
    first = not (_grows or _overs)      # it also kept TensorFlow's start: not a loop's size
    _overs[kind] = max(_overs.get(kind, 0.0), watch.peak - max(end, watch.start))
    if new and not first:
        _grows[kind] = max(0.0, rss_mb() - watch.start)


class _Fit:
    def __init__(self, key, kind) -> None:
        self.key = key
        self.kind = key if kind is None else kind
        self.watch: memwatch.Peak | None = None
        self.serial = -1
        self.new = False

    def __enter__(self):
        global _active, _entered
        with _lock:
            bound = bound_mb()
            self.new = self.key not in _keys
            if bound and _entered == 0:     # what importing TensorFlow reads, given back
                import_tensorflow()
                libpages.give_back()
            if (bound and _active == 0 and self.new and _keys
                    and rss_mb() + expected_rise(self.kind) > bound):
                release()
            _keys.add(self.key)
            _entered += 1
            if _active == 0:
                self.serial = _entered
            _active += 1
        if self.serial >= 0:
            steady = libpages.Steady() if self.new and bound else None
            self.watch = memwatch.Peak(steady).__enter__()
        return self

    def __exit__(self, *exc) -> None:
        global _active
        if self.watch is not None:
            self.watch.__exit__(*exc)
        with _lock:
            _active -= 1
            if self.watch is not None and _entered == self.serial:     # it ran alone
                end = rss_mb()
                if self.new and bound_mb():
                    libpages.give_back()    # what tracing and compiling the loop read
                _learn(self.kind, self.new, self.watch, end)


def before_fit(key, kind=None) -> _Fit:
    """A context manager around one fit that needs the compiled loops named by ``key`` (any
    hashable naming their shapes: what changes the compiled code, e.g. method, ``dim``, table
    sizes). Entering it releases the loops first (:func:`release`) when ``key`` is new since
    the last release, no other fit is running, and the process's resident size plus the rise
    expected of a fit of ``kind`` (:func:`expected_rise`; ``kind``: hashable, default ``key``:
    fits whose memory grows alike, e.g. one dataset and method over every ``dim``) is above
    :func:`bound_mb`."""
    return _Fit(key, kind)
