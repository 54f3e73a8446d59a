"""TensorFlow's import without its eager load of Keras (about 1.5 s of CPU on every start).

At the end of its ``__init__``, TensorFlow 2.16+ imports ``keras.src.optimizers`` "so that any
function/method that needs to happen at load time will trigger", inside ``try: ... except
(ImportError, AttributeError): pass``. With Keras 3 installed that pulls in all of Keras and,
through it, ``matplotlib.pyplot``: about 1.5 of the 4.5 s of CPU that ``import tensorflow``
takes on 2 cores, paid by every ``atrec`` command and every worker. atrec trains with
TensorFlow's core ops and never uses Keras.

:func:`no_eager_keras` wraps the import: while it is active, importing the top-level ``keras``
package fails with ``ImportError`` (its spec is still found, with its real origin, so
TensorFlow's ``tf.keras`` path is set as usual), which TensorFlow's own ``except`` passes over.
Nothing else changes: ``tf.keras`` stays TensorFlow's lazy loader, so a plug-in that uses it
loads Keras on first use, as it would after a plain import; ``import keras`` works too. If a
TensorFlow version ever needs Keras to import, the caller imports again without the guard
(:func:`atrec.runtime.tfquiet.import_tensorflow`).
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import sys

SKIPPED = "keras"


class _Refusing(importlib.abc.Loader):
    def create_module(self, spec):
        return None

    def exec_module(self, module):
        raise ImportError(f"atrec does not load {SKIPPED} while TensorFlow imports",
                          name=SKIPPED)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds ``keras`` where the path finder does, with a loader that refuses to run it."""

    def find_spec(self, name, path=None, target=None):
        if name != SKIPPED:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None:
            spec.loader = _Refusing()
        return spec


@contextlib.contextmanager
def no_eager_keras():
    """Within the block, ``import keras`` raises ``ImportError`` (module doc); a Keras that is
    loaded already stays as it is."""
    if SKIPPED in sys.modules:
        yield
        return
    finder = _Finder()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        sys.modules.pop(SKIPPED, None)   # never left half-imported
