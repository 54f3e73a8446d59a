"""TensorFlow, imported on first use, quietly: ``from atrec.runtime import tf``.

This module stands for the ``tensorflow`` module: the first attribute read from it
(``tf.constant``, ``tf.function``...) imports TensorFlow through
:func:`atrec.runtime.tfquiet.import_tensorflow` (its start-up lines held back, after
:func:`atrec.runtime.configure` has set what TensorFlow reads once at import), and every read
after that is TensorFlow's own attribute. atrec's learners and a plug-in's import it at their
top, so that importing them (listing methods, building the command line, reading results)
never loads TensorFlow; a training call does.
"""

import atrec.runtime.tfquiet as _tfquiet


def __getattr__(name: str):
    """TensorFlow's attribute ``name``, TensorFlow imported first if it was not."""
    if name.startswith("__") and name.endswith("__") and name != "__version__":
        raise AttributeError(name)   # module dunders (pickling, introspection) stay this module's
    value = getattr(_tfquiet.import_tensorflow(), name)
    globals()[name] = value          # read once: later reads are plain module attributes
    return value


def __dir__() -> list[str]:
    return dir(_tfquiet.import_tensorflow())
