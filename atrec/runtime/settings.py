"""Every ``ATREC_*`` environment variable, read in this one module into one frozen object.

:func:`current` reads the environment when it is called and returns a :class:`Settings`; the
rest of atrec asks it instead of reading ``os.environ``, so this table is the whole of atrec's
configuration by environment. Each value is read where it is used (a test or a script may set a
variable between two calls), never cached.

``ATREC_DATA_DIR`` (default ``./data``)
    Folder of downloaded and preprocessed datasets.
``ATREC_RESULTS_DIR`` (default ``./results``)
    Folder of run records, tuning studies, tables and figures.
``ATREC_<NAME>_SOURCE`` (default unset: the official URL)
    A local copy (file, archive or folder) of dataset ``<NAME>`` that ``atrec download`` and
    the automatic downloads install from: ``ATREC_COAT_SOURCE``, ``ATREC_ML_100K_SOURCE``,
    ``ATREC_YAHOO_SOURCE`` (Yahoo! R3 has no public URL).
``ATREC_COMPILE_CACHE`` (default ``$XDG_CACHE_HOME/atrec/xla``, else ``~/.cache/atrec/xla``)
    Folder of compiled loops kept between runs (:mod:`atrec.runtime.compilecache`); ``off``,
    ``0``, ``no``, ``false`` or ``none``: no cache.
``ATREC_MEMORY_BOUND_MB`` (default 1500)
    Peak resident MB under which a process keeps its compiled loops
    (:mod:`atrec.runtime.compiled`); ``0``: no bound, every loop kept.
``ATREC_TF_TRACEBACKS`` (default off)
    Set to anything but empty, ``0``, ``no``, ``false`` or ``off`` to keep TensorFlow's stack
    traces on the operations of atrec's loops, for debugging a learner
    (:mod:`atrec.runtime.tracebacks`).
``ATREC_XLA_CACHE_FLAG`` (set by atrec; not for users)
    The flag atrec added to ``TF_XLA_FLAGS``, so that a child process tells it from the
    user's own.

atrec also sets, once, variables of the libraries it loads, never overriding a value the user
set (:func:`atrec.runtime.configure`): ``TF_CPP_MIN_LOG_LEVEL=3`` (TensorFlow's start-up log,
:mod:`atrec.runtime.tfquiet`), ``TF_ENABLE_ONEDNN_OPTS=0`` (TensorFlow's CPU allocator,
:mod:`atrec.runtime.heap`), ``TF_XLA_FLAGS`` (the compilation cache's folder); and it reads
``MALLOC_ARENA_MAX`` (where set, glibc's heaps are left as the user chose) and ``XLA_FLAGS``
(part of the compilation cache's key).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

DATA_DIR_ENV = "ATREC_DATA_DIR"
RESULTS_DIR_ENV = "ATREC_RESULTS_DIR"
COMPILE_CACHE_ENV = "ATREC_COMPILE_CACHE"
MEMORY_BOUND_ENV = "ATREC_MEMORY_BOUND_MB"
TF_TRACEBACKS_ENV = "ATREC_TF_TRACEBACKS"
XLA_CACHE_FLAG_ENV = "ATREC_XLA_CACHE_FLAG"

FALSE_WORDS = ("", "0", "no", "false", "off")
"""Values of a yes/no variable that mean no (any other value means yes)."""

_SOURCE_ENV = re.compile(r"^ATREC_[A-Z0-9_]+_SOURCE$")


def source_env(name: str) -> str:
    """The variable naming a local copy of dataset ``name``: ``coat`` -> ``ATREC_COAT_SOURCE``,
    ``ml-100k`` -> ``ATREC_ML_100K_SOURCE``."""
    return "ATREC_" + name.upper().replace("-", "_") + "_SOURCE"


@dataclass(frozen=True)
class Settings:
    """atrec's configuration by environment, as read by :func:`current` (the module doc's
    table). Text values are as set, an unset variable reads as ``""``; what a value means, and
    the error for a bad one, belong to the module that uses it (:func:`atrec.paths.data_dir`,
    :func:`atrec.runtime.compiled.bound_mb`, ...)."""

    data_dir: str = ""
    """``ATREC_DATA_DIR``."""
    results_dir: str = ""
    """``ATREC_RESULTS_DIR``."""
    sources: Mapping[str, str] = field(default_factory=dict)
    """Every ``ATREC_<NAME>_SOURCE`` set to a non-empty value, by variable name."""
    compile_cache: str = ""
    """``ATREC_COMPILE_CACHE``, stripped."""
    memory_bound: str = ""
    """``ATREC_MEMORY_BOUND_MB``, stripped."""
    tf_tracebacks: bool = False
    """``ATREC_TF_TRACEBACKS`` set to a value other than those of :data:`FALSE_WORDS`."""
    xla_cache_flag: str = ""
    """``ATREC_XLA_CACHE_FLAG`` (set by atrec for its child processes)."""

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Settings:
        """The settings that the variables of ``environ`` give."""
        return cls(
            data_dir=environ.get(DATA_DIR_ENV, ""),
            results_dir=environ.get(RESULTS_DIR_ENV, ""),
            sources={k: v for k, v in environ.items() if _SOURCE_ENV.match(k) and v},
            compile_cache=environ.get(COMPILE_CACHE_ENV, "").strip(),
            memory_bound=environ.get(MEMORY_BOUND_ENV, "").strip(),
            tf_tracebacks=environ.get(TF_TRACEBACKS_ENV, "").strip().lower() not in FALSE_WORDS,
            xla_cache_flag=environ.get(XLA_CACHE_FLAG_ENV, ""),
        )

    def source(self, name: str) -> str | None:
        """The local copy of dataset ``name`` that ``ATREC_<NAME>_SOURCE`` names; ``None`` when
        unset or empty."""
        return self.sources.get(source_env(name)) or None


def current() -> Settings:
    """The settings of this process's environment now."""
    return Settings.from_environ(os.environ)
