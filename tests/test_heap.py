"""How atrec keeps the process's memory (:mod:`atrec.runtime.heap`): glibc's heaps and TensorFlow's CPU
allocator, each checked in a fresh process, since both are fixed when a process starts."""

import os
import subprocess
import sys

import pytest


def _run(code: str, **env) -> subprocess.CompletedProcess:
    """``code`` in a fresh Python with ``env`` set (a value of None: the variable unset)."""
    env_vars = {k: v for k, v in os.environ.items() if k not in env}
    env_vars.update({k: v for k, v in env.items() if v is not None})
    return subprocess.run([sys.executable, "-c", code], check=True, env=env_vars,
                          capture_output=True, text=True)


@pytest.mark.parametrize("env, capped", [(None, True), ("8", False)])
def test_glibc_keeps_two_heaps_unless_the_user_chose(env, capped, tmp_path):
    """Eight threads that each allocate get their own glibc heap (arena) unless capped;
    ``malloc_info`` lists the heaps."""
    code = f"""
import ctypes, threading, atrec
libc = ctypes.CDLL(None)
keep, ready, done = [], threading.Barrier(9), threading.Event()
def work():
    keep.append(libc.malloc(4096))
    ready.wait(); done.wait()
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads: t.start()
ready.wait()
libc.fopen.restype = ctypes.c_void_p
fp = libc.fopen({str(tmp_path / 'info.xml')!r}.encode(), b"w")
libc.malloc_info(0, ctypes.c_void_p(fp)); libc.fclose(ctypes.c_void_p(fp))
done.set()
for t in threads: t.join()
"""
    _run(code, MALLOC_ARENA_MAX=env)
    heaps = (tmp_path / "info.xml").read_text().count("<heap nr=")
    assert heaps == 2 if capped else heaps > 2


FREED_MB = 256


@pytest.mark.parametrize("env, given_back", [(None, True), ("0", True), ("1", False)])
def test_tensorflow_gives_back_a_freed_tensor_unless_the_user_chose_onednn(env, given_back):
    """A 256 MB tensor, written and dropped, leaves the process's anonymous memory where it was
    with atrec's default; with oneDNN's options on (the user's choice, respected), TensorFlow's
    pool keeps it."""
    code = f"""
import ctypes, os, atrec
from atrec.runtime.tfquiet import import_tensorflow
tf = import_tensorflow()
def anon_mb():
    for line in open("/proc/self/status"):
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
tf.zeros([4])                                       # the device and its allocator exist
ctypes.CDLL(None).malloc_trim(0)
before = anon_mb()
t = tf.zeros([{FREED_MB} * 2**18]); t.numpy()        # 256 MB of float32, every page written
held = anon_mb()
del t
ctypes.CDLL(None).malloc_trim(0)
print(os.environ["TF_ENABLE_ONEDNN_OPTS"], held - before, anon_mb() - before)
"""
    value, held, kept = _run(code, TF_ENABLE_ONEDNN_OPTS=env).stdout.split()
    assert value == (env or "0")
    assert float(held) > 0.9 * FREED_MB                 # the tensor was resident
    assert (float(kept) < 0.25 * FREED_MB) == given_back
