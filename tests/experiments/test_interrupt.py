"""Ctrl-C with real signals sent to a subprocess (:mod:`atrec.experiments.interrupt`).

The child enters :func:`graceful_stop` and waits on a call in the training worker thread, with
SIGINT blocked in its main thread: the kernel then hands each SIGINT to another thread, as it
may when TensorFlow's threads run, and Python's own handler (main thread only) would run only
when the call returns. Presses must count anyway, at once.
"""

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from atrec.experiments import interrupt

REPO = Path(__file__).resolve().parents[2]
CHILD = """
import signal, sys, threading, time
from atrec.experiments import interrupt

with interrupt.graceful_stop():
    # a thread that can take SIGINT, as TensorFlow's do; then the main thread blocks it
    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    print("ready", flush=True)
    interrupt.in_worker(time.sleep, float(sys.argv[1]))   # the compiled call in progress
    print("requested" if interrupt.requested() else "not requested", flush=True)
"""


def _child(call_s: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(call_s)], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline().strip() == "ready"
    return proc


@pytest.mark.parametrize("gap_s", [0.3, 0.05])
def test_a_second_ctrl_c_quits_at_once_even_close_behind_the_first(gap_s):
    proc = _child(30)
    start = time.monotonic()
    proc.send_signal(signal.SIGINT)
    time.sleep(gap_s)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    seconds = time.monotonic() - start
    assert proc.returncode == interrupt.QUIT_CODE, (out, err)
    assert seconds < 10, seconds   # not when the 30 s call returns
    assert err.splitlines() == [interrupt.NOTICE, interrupt.QUIT], err
    assert "Traceback" not in err and out == ""


def test_one_ctrl_c_is_noticed_at_once_and_lets_the_call_finish():
    proc = _child(3)
    proc.send_signal(signal.SIGINT)
    # the notice comes before the call returns, although the main thread never ran a handler
    assert proc.stderr.readline().strip() == interrupt.NOTICE
    assert proc.poll() is None
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0 and out.strip() == "requested", (out, err)


def test_signal_handling_is_restored_on_leaving():
    before = signal.getsignal(signal.SIGINT), signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(before[1])
    with interrupt.graceful_stop():
        assert signal.getsignal(signal.SIGINT) is not before[0]
    assert signal.getsignal(signal.SIGINT) is before[0]
    assert signal.set_wakeup_fd(before[1]) == before[1]
    assert not interrupt.requested()
