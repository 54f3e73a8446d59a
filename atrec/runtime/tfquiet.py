"""TensorFlow without its start-up chatter, and with its numbers untouched.

TensorFlow 2.21 prints, on import, absl's ``WARNING: All log messages before
absl::InitializeLog() is called are written to STDERR`` and an ``I...] port.cc:153] oneDNN custom
operations are on ...`` line (twice: two of its libraries log it). Both come from C++ absl
logging before anything initialises it, so ``TF_CPP_MIN_LOG_LEVEL`` (read later) does not stop
them, and absl's C++ log has no environment switch. atrec therefore:

- sets the documented switches before TensorFlow loads, without overriding a value the user
  set: ``TF_CPP_MIN_LOG_LEVEL=3`` (:func:`quiet_defaults`, called by
  :func:`atrec.runtime.configure`) and the Python ``absl`` logger's verbosity (errors only);
- imports TensorFlow once through :func:`import_tensorflow`, which holds back the native lines
  written during the import whose severity is below ``TF_CPP_MIN_LOG_LEVEL`` (0 = info,
  1 = warning, 2 = error, 3 = fatal only) and passes every other line through. A user who sets
  ``TF_CPP_MIN_LOG_LEVEL=0`` sees everything.

Python-side, TensorFlow warns that "N out of the last M calls to <function _train_loop>
triggered tf.function retracing" whenever a run compiles loops for several shapes (a tuning
run: one per dim tried). atrec compiles one loop per dim and table size on purpose
(``atrec.learners.mf._fit_loop``), so unless ``TF_CPP_MIN_LOG_LEVEL`` is 0 that warning is
dropped (:class:`RetracingFilter`); every other Python-side message passes.

``TF_ENABLE_ONEDNN_OPTS`` is not a log switch: :mod:`atrec.runtime.heap` sets it, for memory.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import tempfile

from atrec.runtime import gcfreeze, kerasless

LOG_LEVEL_ENV = "TF_CPP_MIN_LOG_LEVEL"
QUIET_LOG_LEVEL = "3"
_ABSL_PREAMBLE = b"WARNING: All log messages before absl::InitializeLog() is called"
# absl's native line: severity letter, MMDD, time, thread, file:line]
_ABSL_LINE = re.compile(rb"^([IWEF])\d{4} \d\d:\d\d:\d+\.\d+ +\d+ [^\]]*\] ")
_SEVERITY = {b"I": 0, b"W": 1, b"E": 2, b"F": 3}


def quiet_defaults() -> None:
    """Set ``TF_CPP_MIN_LOG_LEVEL`` to 3 unless the user set it (cheap: imports nothing)."""
    os.environ.setdefault(LOG_LEVEL_ENV, QUIET_LOG_LEVEL)


def _min_level() -> int:
    try:
        return int(os.environ.get(LOG_LEVEL_ENV, "0"))
    except ValueError:
        return 0


class RetracingFilter(logging.Filter):
    """Drops TensorFlow's "triggered tf.function retracing" warning (module doc)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "triggered tf.function retracing" not in record.getMessage()


def _quiet_python_side(level: int) -> None:
    if level >= 1:
        tf_logger = logging.getLogger("tensorflow")
        if not any(isinstance(f, RetracingFilter) for f in tf_logger.filters):
            tf_logger.addFilter(RetracingFilter())


def import_tensorflow():
    """``import tensorflow`` with the start-up lines below the wanted level held back, and
    without TensorFlow's eager load of Keras (:mod:`atrec.runtime.kerasless`)."""
    if "tensorflow" in sys.modules:
        _quiet_python_side(_min_level())
        return sys.modules["tensorflow"]
    quiet_defaults()
    level = _min_level()
    _quiet_python_side(level)
    if level >= 3:
        try:
            from absl import logging as absl_logging  # TensorFlow's dependency: set before it loads

            absl_logging.set_verbosity(absl_logging.ERROR)
        except ImportError:
            pass
    if level <= 0:
        return _import()
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no standard error to filter
        return _import()
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            tensorflow = _import()
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            kept = [line for line in captured.read().splitlines(keepends=True)
                    if not _held_back(line, level)]
            if kept:
                os.write(2, b"".join(kept))
    return tensorflow


def _import():
    """TensorFlow, imported without its eager Keras load; imported plainly if that fails (a
    TensorFlow that needs Keras to import: the half-imported modules are dropped first). The
    import runs with the collector paused, its objects then frozen, where a command asked
    (:mod:`.gcfreeze`)."""
    with gcfreeze.importing():
        try:
            with kerasless.no_eager_keras():
                import tensorflow  # this function is TensorFlow's one import
        except ImportError:
            for name in [n for n in sys.modules if n.split(".")[0] in ("tensorflow", "keras")]:
                del sys.modules[name]
            import tensorflow  # as above, with Keras
    return tensorflow


def _held_back(line: bytes, level: int) -> bool:
    if line.startswith(_ABSL_PREAMBLE):
        return True
    match = _ABSL_LINE.match(line)
    return bool(match) and _SEVERITY[match.group(1)] < level
