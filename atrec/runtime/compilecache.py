"""Compiled loops kept on disk, so that a later process, or this one after a release, loads them.

XLA spends most of a loop's first call optimising and generating code: about 4.5 s of the
8 s an AT loop on Coat takes on 2 cores. TensorFlow can keep those executables in a folder
(its persistent compilation cache, ``--tf_xla_persistent_cache_directory``) and load them by a
key: the traced function's name, its argument shapes and a fingerprint of its HLO. atrec turns
that on (:func:`configure`, called by :func:`atrec.runtime.configure` before TensorFlow loads) in
``ATREC_COMPILE_CACHE`` (default ``~/.cache/atrec/xla``; ``off``: no cache), in a subfolder
per TensorFlow version, CPU and ``XLA_FLAGS``, so that code made for one machine or one set of
compiler flags is never loaded under another.

Why names must be made stable. TensorFlow names every traced function (the loop, and each
``while_loop`` body inside it) with a process-wide counter, so the same loop gets other names,
hence another key, in another process or after :func:`atrec.runtime.compiled.release`, and the
cache would never hit. :func:`stable` runs a loop's calls in a *naming scope*: while it is
active, that counter (``tensorflow.python.framework.ops.uid``) answers a hash of the loop's
identity (its factory and arguments, the call's shapes), of which naming helper asks, and of
how many times it has asked, so the same loop traced anywhere gets the same names. A
different loop gets different names; two different loops that would get the same scope in one
TensorFlow context fall back to TensorFlow's own counter (:func:`_scope_for`).

Names TensorFlow gives by other counters. TensorFlow's bridge to XLA copies a constant that a
``while_loop`` or ``cond`` body captures from outside into that body, under a name numbered by a
counter of its own (``ones/_0``, ``ones/_1``), which moves with what the process compiled
before and with which replica thread compiles first; the name is in the HLO, so the loop would
miss. AT's loop therefore makes its constant weights inside the update that uses them
(:func:`atrec.learners.at._update`). A plug-in's loop that captures a constant into a body may
still miss now and then: it is then compiled, as without the cache, and kept as one more entry.

Why this cannot change a number. A hit loads the executable XLA made from the same HLO (the
fingerprint covers the whole program, so changed code misses and compiles), for the same CPU,
TensorFlow and flags: the same machine code. Coat's 240 records and the tests in
``tests/learners/test_compilecache.py`` check this bit for bit against compiled loops.

TensorFlow writes an entry to a temporary file and renames it, so processes that share the
folder (Dask workers, tuning workers) never read half an entry. An entry damaged afterwards
makes the call fail ("Read less bytes than requested"), so :func:`configure` checks the entries'
framing first and removes those that are not whole, with temporary files left by killed
processes (:func:`atrec.runtime.cacheentries.sweep`, which reads only the entries it has not
found whole before). If an entry still fails to load (cut short, or not the entry its name
promises), it is removed and the command stops with one line asking to run it again
(TensorFlow remembers the failure for the rest of the process; the finished runs are kept):
:func:`_cache_problem`. The folder is kept under
:data:`atrec.runtime.cacheentries.LIMIT_MB` by removing the oldest entries.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import sys
import threading
from importlib import metadata
from pathlib import Path

from atrec.errors import AtrecError
from atrec.runtime import settings
from atrec.runtime.cacheentries import sweep

CACHE_ENV = settings.COMPILE_CACHE_ENV
OFF = ("off", "0", "no", "false", "none")
_FLAG = "--tf_xla_persistent_cache_directory"
_MARK = settings.XLA_CACHE_FLAG_ENV   # the flag atrec added to TF_XLA_FLAGS, seen by children
_folder: Path | None = None     # where this process's entries go, None when the cache is off
_local = threading.local()
_claims: dict = {}               # scope -> id of the loop that named with it (this context)
_installed = False
_tf_uid = None                   # TensorFlow's own name counter, once _install replaced it


def default_root() -> Path:
    """``$XDG_CACHE_HOME/atrec/xla``, else ``~/.cache/atrec/xla``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "atrec" / "xla"


def _machine_tag() -> str:
    """A short hash of what decides the code XLA makes here: TensorFlow's version, the CPU
    (model and instruction-set flags) and ``XLA_FLAGS``."""
    version = "unknown"
    for dist in ("tensorflow", "tensorflow-cpu", "tf-nightly"):
        try:
            version = metadata.version(dist)
            break
        except metadata.PackageNotFoundError:
            continue
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = "".join(sorted({line for line in f
                                  if line.startswith(("model name", "flags"))}))
    except OSError:
        cpu = platform.processor() + platform.machine()
    text = "|".join((version, cpu, os.environ.get("XLA_FLAGS", "")))
    return f"tf{version}-" + hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


def configure() -> Path | None:
    """Point TensorFlow's compilation cache at this machine's folder (module doc), before
    TensorFlow reads ``TF_XLA_FLAGS``. Does nothing when ``ATREC_COMPILE_CACHE`` is ``off`` or
    ``TF_XLA_FLAGS`` already names a cache folder (the user's choice). A folder that cannot be
    used turns the cache off (it only saves time), with one line on stderr when the user named
    it; the default folder (a read-only home) fails silently, not on every command. Returns
    the folder."""
    global _folder
    _folder = None
    _drop_inherited_flag()
    choice = settings.current().compile_cache
    if choice.lower() in OFF or _FLAG in os.environ.get("TF_XLA_FLAGS", ""):
        return None
    folder = (Path(choice).expanduser() if choice else default_root()) / _machine_tag()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not os.access(folder, os.W_OK | os.X_OK):
            raise PermissionError("not writable")
    except OSError as err:
        if choice:       # the user's folder: say so; the default one fails silently
            print(f"atrec: compiling without a cache: {folder} cannot be used "
                  f"({getattr(err, 'strerror', None) or err}); set {CACHE_ENV} to a writable "
                  f"folder, or to off", file=sys.stderr)
        return None
    sweep(folder)
    flags = os.environ.get("TF_XLA_FLAGS", "")
    ours = f"{_FLAG}={folder}"
    os.environ["TF_XLA_FLAGS"] = f"{flags} {ours}".strip()
    os.environ[_MARK] = ours
    _folder = folder
    return folder


def _drop_inherited_flag() -> None:
    """Remove from ``TF_XLA_FLAGS`` the flag that atrec added in a parent process (named by
    ``ATREC_XLA_CACHE_FLAG``), so that a child (a worker, a benchmark's run) decides for itself
    from its own ``ATREC_COMPILE_CACHE``, and names its loops stably, instead of taking the flag
    for the user's choice."""
    ours = settings.current().xla_cache_flag
    os.environ.pop(_MARK, None)
    flags = os.environ.get("TF_XLA_FLAGS", "")
    if ours and ours in flags.split():
        rest = " ".join(flag for flag in flags.split() if flag != ours)
        if rest:
            os.environ["TF_XLA_FLAGS"] = rest
        else:
            del os.environ["TF_XLA_FLAGS"]


def folder() -> Path | None:
    """This process's cache folder, None when the cache is off."""
    return _folder


# ---------------------------------------------------------------------------------------------
# Stable names

def _install() -> bool:
    """Replace TensorFlow's name counter by :func:`_uid` (once). False where TensorFlow has no
    such counter: names then stay TensorFlow's and the cache only misses."""
    global _installed, _tf_uid
    if _installed:
        return True
    try:
        from tensorflow.python.framework import ops  # TensorFlow: loaded by the first fit only
    except ImportError:
        return False
    if not callable(getattr(ops, "uid", None)):
        return False
    _tf_uid = ops.uid
    ops.uid = _uid
    _installed = True
    return True


def _uid() -> int:
    scope = getattr(_local, "scope", None)
    if scope is None:
        return _tf_uid()
    caller = sys._getframe(1)
    site = f"{caller.f_code.co_name}<{caller.f_back.f_code.co_name if caller.f_back else ''}"
    count = _local.counts.get(site, 0)
    _local.counts[site] = count + 1
    digest = hashlib.blake2b(f"{scope}|{site}|{count}".encode(), digest_size=7).digest()
    return int.from_bytes(digest, "big")


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _describe(value) -> str:
    """What identifies an argument: shape and dtype for arrays and tensors (also inside tuples,
    lists and dicts), the value's repr (without memory addresses) otherwise."""
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        return f"{dtype}{list(shape)}"
    if isinstance(value, (tuple, list)):
        return "(" + ",".join(_describe(v) for v in value) + ")"
    if isinstance(value, dict):   # a stage's parameters and constants by name (epochs.py)
        return "{" + ",".join(f"{k}:{_describe(v)}" for k, v in sorted(value.items())) + "}"
    return _ADDRESS.sub("", repr(value))


def forget() -> None:
    """Forget which loops named with which scope: TensorFlow's context was reset
    (:func:`atrec.runtime.compiled.release`), so the names are free again."""
    _claims.clear()


def _scope_for(identity: str, loop, args, kwargs) -> str | None:
    scope = hashlib.blake2b(
        "|".join([identity, _describe(args), _describe(sorted(kwargs.items()))]).encode(),
        digest_size=12).hexdigest()
    owner = _claims.setdefault(scope, id(loop))
    return scope if owner == id(loop) else None


class Stable:
    """A compiled loop whose calls trace under a naming scope (module doc); everything else is
    the wrapped ``tf.function``'s."""

    def __init__(self, loop, identity: str) -> None:
        self._loop = loop
        self._identity = identity

    def __getattr__(self, name):
        return getattr(self._loop, name)

    def __call__(self, *args, **kwargs):
        if _folder is None or getattr(_local, "scope", None) is not None or not _install():
            return self._loop(*args, **kwargs)
        scope = _scope_for(self._identity, self._loop, args, kwargs)
        _local.scope, _local.counts = scope, {}
        try:
            return self._call(args, kwargs)
        finally:
            _local.scope = None

    def _call(self, args, kwargs):
        import tensorflow as tf  # loaded already: a loop is being called

        try:
            return self._loop(*args, **kwargs)
        except tf.errors.OpError as err:
            problem = _cache_problem(err)
            if problem is None:                    # the loop's own error
                raise
            # TensorFlow keeps the failed compilation for this process, so no second try here
            raise AtrecError(f"a compiled loop kept in {_folder} {problem} "
                             f"({err.message.splitlines()[0]}): run the command again (finished "
                             f"runs are kept)") from None


MISMATCH = ("Serialized cache key does not match", "Serialized HLO does not match",
            "No binary found in serialized entry")
"""TensorFlow's errors for an entry whose content is not what its name promises
(``tensorflow/compiler/jit/device_executable_persistor.h``): a file copied or renamed by hand,
or anything else under an entry's name."""


def _cache_problem(err) -> str | None:
    """What went wrong with the cache folder when a loop's call failed with ``err``, after
    removing what caused it; None when the cache is not the cause.

    * A cut-short entry (``OutOfRange``, ``DataLoss``): :func:`sweep` finds and removes it.
    * An entry whose content does not match its name (:data:`MISMATCH`): TensorFlow does not say
      which, so every entry of the folder goes (a cache: they are compiled again).
    * An entry removed between TensorFlow's check and its read (``NotFound`` naming the folder):
      another process pruned the folder; nothing to remove."""
    import tensorflow as tf  # loaded already: a loop call failed

    if _folder is None:
        return None
    if isinstance(err, (tf.errors.OutOfRangeError, tf.errors.DataLossError)):
        cut_short = sweep(_folder, limit_mb=float("inf"), trust_list=False)
        return "could not be read; it is removed now" if cut_short else None
    if isinstance(err, tf.errors.InvalidArgumentError) and any(m in err.message for m in MISMATCH):
        sweep(_folder, limit_mb=0)
        return "did not match its name; the folder was emptied"
    if isinstance(err, tf.errors.NotFoundError) and str(_folder) in err.message:
        return "was removed by another process while this one read it"
    return None


def stable(loop, factory, args: tuple, kwargs: dict) -> Stable:
    """``loop`` (made by ``factory(*args, **kwargs)``) with stable names for its traces."""
    identity = "|".join([f"{factory.__module__}.{factory.__qualname__}", _describe(args),
                         _describe(sorted(kwargs.items()))])
    return Stable(loop, identity)
