"""Python's cyclic garbage collector told to skip TensorFlow's own objects, in atrec's commands.

Importing TensorFlow creates about 265,000 objects that the cyclic collector tracks (modules,
classes, functions, registrations) and that live as long as the process. Every full
collection walks all of them: about 90 ms each with TensorFlow loaded. A 20-seed binary run on
Coat makes five (0.3 s), and the interpreter's shutdown walks them again while it tears the
modules down: 0.6-0.8 s after the command had finished, 8-10% of ``atrec train --protocol
binary-icde24 --method mf --dataset coat --seeds 20`` (docs/performance.md).

:func:`request` asks that every object alive right after TensorFlow's import be moved to the
collector's permanent generation (:func:`gc.freeze`), which collections skip: the command line
asks for it when it starts, and :func:`atrec.runtime.tfquiet.import_tensorflow` calls
:func:`after_import`. Objects made later (traced loops, data, results) are collected as
before, and reference counting frees everything as before; only cyclic garbage that existed
before the freeze would stay. That is why the library alone does not freeze: a notebook
that imports TensorFlow through atrec after building its own data keeps the collector as it
was. No number changes: the collector frees memory, it computes nothing.
"""

from __future__ import annotations

import gc
import sys

_requested = False


def request() -> None:
    """Freeze what exists once TensorFlow is imported (now, if it already is)."""
    global _requested
    _requested = True
    if "tensorflow" in sys.modules:
        gc.freeze()


def after_import() -> None:
    """TensorFlow has just been imported: freeze what exists if :func:`request` asked."""
    if _requested:
        gc.freeze()
