"""atrec's compiled loops are traced without a Python stack trace on each operation.

TensorFlow records, for every operation it traces into a graph, the Python stack that created
it (``tf_stack.extract_stack``, attached by ``TF_SetOpStackTrace``). Its bridge to XLA then
turns each trace into the source metadata of the HLO instructions, and keeps what it computed
for as long as the loop is held. For one AT loop on Coat that was about 30 of the 95 MB the
loop keeps after compiling (heaptrack: ``StackTraceWrapper::LastUserFrame`` under the bridge's
``XlaCompilationDevice::Compute``), and tracing the stacks took part of every trace. A tuning
run holds one loop per ``dim`` it visits, so this is memory of the long runs
(``docs/performance.md``, "Stack traces of traced operations").

:func:`without` wraps a loop so that the operations traced by its calls carry no stack trace.
Nothing computed changes: the trace is metadata, not code (Coat's 240 records, Table 1's 480
and Coat's tuning are bit-identical with and without it). What a user loses is the "defined at"
part of TensorFlow's message when an operation of a loop fails at run time; setting
``ATREC_TF_TRACEBACKS=1`` keeps the traces, for debugging a plug-in's learner. The compilation
cache's keys include the metadata, so loops traced either way are kept as separate entries.

Other code of the process (a user's own ``tf.function``) keeps its traces: the switch is per
thread, on only while one of atrec's loops is called. Where TensorFlow lacks the two functions
this replaces, loops keep their traces.
"""

from __future__ import annotations

import threading

from atrec.runtime import settings

TRACEBACKS_ENV = settings.TF_TRACEBACKS_ENV

_local = threading.local()
_lock = threading.Lock()
_installed: bool | None = None      # None: not tried yet; False: TensorFlow lacks the hooks


def keep_requested() -> bool:
    """Whether the user asked to keep the traces (``ATREC_TF_TRACEBACKS`` set to a value other
    than empty, ``0``, ``no``, ``false`` or ``off``)."""
    return settings.current().tf_tracebacks


def _install() -> bool:
    """Replace TensorFlow's stack capture and attachment by versions that do nothing while
    :func:`active` (once). False where TensorFlow has no such functions."""
    global _installed
    with _lock:
        if _installed is not None:
            return _installed
        try:
            from tensorflow.python.client import pywrap_tf_session  # TensorFlow: loaded by now
            from tensorflow.python.util import tf_stack
        except ImportError:
            _installed = False
            return False
        extract = getattr(tf_stack, "extract_stack", None)
        attach = getattr(pywrap_tf_session, "TF_SetOpStackTrace", None)
        if not (callable(extract) and callable(attach)):
            _installed = False
            return False

        def extract_stack(stacklevel=1):
            if active():
                return None
            return extract(stacklevel + 1)       # one frame more: this one

        def set_op_stack_trace(c_op, trace):
            if trace is not None:
                attach(c_op, trace)

        tf_stack.extract_stack = extract_stack
        pywrap_tf_session.TF_SetOpStackTrace = set_op_stack_trace
        _installed = True
        return True


def active() -> bool:
    """Whether this thread is calling one of atrec's loops now (traces are then dropped)."""
    return getattr(_local, "depth", 0) > 0


class Without:
    """A compiled loop whose calls trace their operations without stack traces (module doc);
    everything else is the wrapped loop's."""

    def __init__(self, loop) -> None:
        self._loop = loop

    def __getattr__(self, name):
        return getattr(self._loop, name)

    def __call__(self, *args, **kwargs):
        if keep_requested() or not _install():
            return self._loop(*args, **kwargs)
        _local.depth = getattr(_local, "depth", 0) + 1
        try:
            return self._loop(*args, **kwargs)
        finally:
            _local.depth -= 1


def without(loop) -> Without:
    """``loop`` (a ``tf.function``, or a wrapper of one) traced without stack traces."""
    return Without(loop)
