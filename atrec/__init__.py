"""atrec: reproduce and benchmark asymmetric tri-training for MNAR explicit feedback.

The library is usable without the command line; ``atrec.cli`` is a thin shell over it.
Importing atrec loads no TensorFlow and no pandas: TensorFlow is imported by the first training
call (:mod:`atrec.runtime.tf`), pandas by :func:`load_runs`. What ``import atrec`` sets up in
the process, before anything can load TensorFlow, is one call,
:func:`atrec.runtime.configure` (glibc's heaps, TensorFlow's allocator and start-up log, the
compilation cache on disk).
"""

from atrec.runtime import configure

configure()  # first thing: TensorFlow reads what it sets once, at its import

from atrec._version import __version__  # noqa: E402
from atrec.data.ratings import Ratings  # noqa: E402
from atrec.data.splits import Split, make_split  # noqa: E402
from atrec.errors import AtrecError  # noqa: E402
from atrec.reporting.export import load_runs  # noqa: E402

__all__ = ["AtrecError", "Ratings", "Split", "load_runs", "make_split", "__version__"]
