"""atrec: reproduce and benchmark asymmetric tri-training for MNAR explicit feedback.

The library is usable without the command line; ``atrec.cli`` is a thin shell over it.
Heavy modules (TensorFlow models) are imported lazily by the functions that need them, and
TensorFlow's start-up log lines are silenced (:mod:`atrec.tfquiet`); glibc keeps two heaps and
TensorFlow's CPU allocator gives back what it frees (:mod:`atrec.heap`); compiled loops are kept
on disk (:mod:`atrec.learners.compilecache`).
"""

__version__ = "0.1.0"

from atrec.heap import limit_arenas, plain_tensorflow_allocator  # noqa: E402

limit_arenas()    # before any thread allocates: see atrec.heap
plain_tensorflow_allocator()  # before anything can load TensorFlow: see atrec.heap

from atrec.tfquiet import quiet_defaults  # noqa: E402

quiet_defaults()  # before anything can load TensorFlow: see atrec.tfquiet

from atrec.learners.compilecache import configure  # noqa: E402

configure()       # before TensorFlow reads TF_XLA_FLAGS: see atrec.learners.compilecache

from atrec.data.ratings import Ratings  # noqa: E402
from atrec.data.splits import Split, make_split  # noqa: E402
from atrec.errors import AtrecError  # noqa: E402

__all__ = ["AtrecError", "Ratings", "Split", "load_runs", "make_split", "__version__"]


def __getattr__(name: str):
    """``atrec.load_runs`` (:func:`atrec.export.load_runs`), imported on first use so that
    ``import atrec`` does not import pandas."""
    if name == "load_runs":
        from atrec.export import load_runs

        return load_runs
    raise AttributeError(f"module 'atrec' has no attribute {name!r}")
