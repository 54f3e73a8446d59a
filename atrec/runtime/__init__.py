"""The process layer: what atrec does to the process it runs in, knowing no model.

- :mod:`.settings`: every ``ATREC_*`` variable, read in one place (the table of them is there
  and in ``docs/configuration.md``);
- :mod:`.heap`: glibc's heaps and TensorFlow's CPU allocator;
- :mod:`.tfquiet` and :mod:`.tf`: TensorFlow imported quietly, on first use
  (``from atrec.runtime import tf``: learners and plug-ins take TensorFlow from here);
- :mod:`.compilecache`: compiled loops kept on disk, with :mod:`.cacheentries` (which entries
  are whole, and the sweep that removes the others);
- :mod:`.compiled`: the compiled loops held in memory and the bound on them, with
  :mod:`.memwatch` (the resident size and its peak), :mod:`.libpages` (library pages given
  back) and :mod:`.tracebacks` (loops traced without Python stack traces);
- :mod:`.gcfreeze`: TensorFlow's objects kept out of the garbage collector's walks, and no full
  collection during TensorFlow's import, in atrec's commands.

:func:`configure` is everything ``import atrec`` sets up.
"""

from __future__ import annotations

from atrec.runtime import compilecache, heap, tfquiet

__all__ = ["configure"]

_configured = False


def configure() -> None:
    """Prepare this process for TensorFlow; ``import atrec`` calls it, once, first thing.

    Each step must come before TensorFlow is imported (it reads these settings once) or before
    the process has threads that allocate, and none overrides a value the user set:

    1. glibc keeps two heaps (:func:`atrec.runtime.heap.limit_arenas`, unless
       ``MALLOC_ARENA_MAX`` is set);
    2. TensorFlow's CPU allocator gives back what it frees (``TF_ENABLE_ONEDNN_OPTS=0``:
       :func:`atrec.runtime.heap.plain_tensorflow_allocator`);
    3. TensorFlow's start-up log is silenced (``TF_CPP_MIN_LOG_LEVEL=3``:
       :func:`atrec.runtime.tfquiet.quiet_defaults`);
    4. compiled loops are kept in ``ATREC_COMPILE_CACHE`` (``TF_XLA_FLAGS``:
       :func:`atrec.runtime.compilecache.configure`).

    Nothing here changes a number atrec computes. Later calls do nothing.
    """
    global _configured
    if _configured:
        return
    _configured = True
    heap.limit_arenas()
    heap.plain_tensorflow_allocator()
    tfquiet.quiet_defaults()
    compilecache.configure()
