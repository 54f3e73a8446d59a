"""Python's cyclic garbage collector told to skip TensorFlow's own objects, in atrec's commands.

Importing TensorFlow creates about 265,000 objects that the cyclic collector tracks (modules,
classes, functions, registrations) and that live as long as the process. Every full
collection walks all of them: about 90 ms each with TensorFlow loaded. A 20-seed binary run on
Coat makes five (0.3 s), and the interpreter's shutdown walks them again while it tears the
modules down: 0.6-0.8 s after the command had finished, 8-10% of ``atrec train --protocol
binary-icde24 --method mf --dataset coat --seeds 20`` (docs/performance.md).

:func:`request` asks that every object alive right after TensorFlow's import be moved to the
collector's permanent generation (:func:`gc.freeze`), which collections skip: the command line
asks for it when it starts, and :func:`atrec.runtime.tfquiet.import_tensorflow` imports
TensorFlow inside :func:`importing`. Where the freeze was asked for, the collector's full
collections are also held off during the import: the import itself triggered four, each
walking everything imported so far (0.25-0.3 s in all, collecting nothing), and what the
import keeps is frozen at its end anyway. The young collections still run, so the import's
short-lived cyclic garbage (about 130,000 objects) is freed, not frozen. Objects made later (traced loops, data, results) are collected as
before, and reference counting frees everything as before; only cyclic garbage that existed
before the freeze would stay. That is why the library alone does not freeze: a notebook
that imports TensorFlow through atrec after building its own data keeps the collector as it
was. No number changes: the collector frees memory, it computes nothing.
"""

from __future__ import annotations

import gc
import sys
from contextlib import contextmanager

_requested = False
# the third threshold of gc.set_threshold while TensorFlow is imported: so many young
# collections before a full one that none comes during the import
NO_FULL_COLLECTION = 2**30


def request() -> None:
    """Freeze what exists once TensorFlow is imported (now, if it already is)."""
    global _requested
    _requested = True
    if "tensorflow" in sys.modules:
        gc.freeze()


@contextmanager
def importing():
    """The block imports TensorFlow: where :func:`request` asked, no full collection runs in the
    block and what exists at its end is frozen (nothing is frozen if the block fails; the
    collector's thresholds are put back either way)."""
    if not _requested:
        yield
        return
    thresholds = gc.get_threshold()
    gc.set_threshold(thresholds[0], thresholds[1], NO_FULL_COLLECTION)
    try:
        yield
        gc.freeze()
    finally:
        gc.set_threshold(*thresholds)
