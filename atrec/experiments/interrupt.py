"""Ctrl-C during training: finish the compiled call in progress, save it, then stop.

A compiled training call cannot be interrupted, and Python only raises ``KeyboardInterrupt``
once it returns, so a plain Ctrl-C used to wait for the call and then drop the group it had just
trained. Inside :func:`graceful_stop` the first Ctrl-C only sets a flag (and says so at once: the
training runs in a worker thread, :func:`in_worker`, so the main thread is free to answer); the
group in progress is saved when its call returns, and :func:`check` then raises
:class:`RunInterrupted` with a message naming what was saved and what will resume. The CLI turns
it into that line and exit code 130. A second Ctrl-C ends the process at once, exit code 130
(its claims are then stale and taken over by the next run).

Presses are counted as the operating system delivers them, not as Python gets round to its
handler: Python runs a handler only when the main thread is between bytecodes, so two presses
that arrive while the main thread is inside a long call (loading data, tracing or compiling a
loop) reach one handler run, and the second press would be lost. Python's C-level handler
writes a byte to the wakeup file descriptor (:func:`signal.set_wakeup_fd`) at every delivery,
whatever the main thread is doing; a watcher thread reads those bytes and counts.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

_stop = threading.Event()
_installed = threading.local()
_pool: ThreadPoolExecutor | None = None

NOTICE = "stopping after the group of seeds in progress is saved (Ctrl-C again to quit now)"
QUIT = ("interrupted: quit at once; the groups in progress are lost, the finished ones saved: "
        "run the same command again to resume")
QUIT_CODE = 130   # the shell's code for a process ended by SIGINT, as the CLI's interrupted runs


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a run after saving what was finished; ``str()`` says what will resume."""


def _on_main_thread(_signum, _frame) -> None:
    """Python's handler: nothing to do (the watcher counts). Installing one keeps Python's
    C-level handler, which writes the wakeup byte, in place of the default action."""


def _watch(fd: int, err_fd: int) -> None:
    """Count the SIGINT deliveries written to the wakeup pipe ``fd`` until it is closed: the
    first asks the run to stop, the second quits the process. The last line goes to
    ``err_fd``, standard error as it was on entering: TensorFlow's import holds file
    descriptor 2 back for a moment (:mod:`atrec.tfquiet`), and a process that quits then would
    lose a line written there."""
    presses = 0
    while data := os.read(fd, 64):
        presses += data.count(bytes([signal.SIGINT]))
        if presses >= 1 and not _stop.is_set():
            _stop.set()
            print(NOTICE, file=sys.stderr, flush=True)
        if presses >= 2:
            with contextlib.suppress(OSError):
                os.write(err_fd, (QUIT + "\n").encode())
            os._exit(QUIT_CODE)


@contextlib.contextmanager
def graceful_stop():
    """While inside, Ctrl-C asks the run to stop after the group in progress (see the module).

    Nested uses share the outer one; outside the main thread (where signals cannot be handled)
    it does nothing and Ctrl-C keeps Python's behaviour.
    """
    if getattr(_installed, "on", False) or threading.current_thread() is not threading.main_thread():
        yield
        return
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)   # set_wakeup_fd's condition: a signal never waits on it
    err_fd = os.dup(2)
    previous_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    previous = signal.signal(signal.SIGINT, _on_main_thread)
    watcher = threading.Thread(target=_watch, args=(read_fd, err_fd), name="atrec-ctrl-c",
                               daemon=True)
    watcher.start()
    _installed.on = True
    _stop.clear()
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.set_wakeup_fd(previous_fd)
        os.close(write_fd)   # the watcher reads the end of the pipe and returns
        watcher.join()
        os.close(read_fd)
        os.close(err_fd)
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
