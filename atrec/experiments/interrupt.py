"""Ctrl-C during training: finish the compiled call in progress, save it, then stop.

A compiled training call cannot be interrupted, and Python only raises ``KeyboardInterrupt``
once it returns, so a plain Ctrl-C used to wait for the call and then drop the group it had just
trained. Inside :func:`graceful_stop` the first Ctrl-C only sets a flag (and says so at once: the
training runs in a worker thread, :func:`in_worker`, so the main thread is free to answer); the
group in progress is saved when its call returns, and :func:`check` then raises
:class:`RunInterrupted` with a message naming what was saved and what will resume. The CLI turns
it into that line and exit code 130. A second Ctrl-C restores the default signal action and
ends the process at once (its claims are then stale and taken over by the next run).
"""

from __future__ import annotations

import signal
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

_stop = threading.Event()
_installed = threading.local()
_pool: ThreadPoolExecutor | None = None


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a run after saving what was finished; ``str()`` says what will resume."""


def _notice(_signum, _frame) -> None:
    _stop.set()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    print("stopping after the group of seeds in progress is saved (Ctrl-C again to quit now)",
          file=sys.stderr, flush=True)


@contextmanager
def graceful_stop():
    """While inside, Ctrl-C asks the run to stop after the group in progress (see the module).

    Nested uses share the outer one; outside the main thread (where signals cannot be handled)
    it does nothing and Ctrl-C keeps Python's behaviour.
    """
    if getattr(_installed, "on", False) or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, _notice)
    _installed.on = True
    _stop.clear()
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        _installed.on = False
        _stop.clear()


def requested() -> bool:
    """Whether Ctrl-C asked the run to stop."""
    return _stop.is_set()


def check(message) -> None:
    """Raise :class:`RunInterrupted` with ``message()`` if Ctrl-C asked the run to stop."""
    if _stop.is_set():
        raise RunInterrupted(message())


def in_worker(func, *args):
    """``func(*args)`` on a worker thread while the main thread waits, so that Ctrl-C is
    answered at once rather than when a compiled call returns. Results and exceptions are
    those of the call; the numbers do not depend on the thread that makes them."""
    global _pool
    if threading.current_thread() is not threading.main_thread():
        return func(*args)
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="atrec-train")
    return _pool.submit(func, *args).result()
