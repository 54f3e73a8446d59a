"""One thread inside each TensorFlow op for the binary protocols' epoch loops.

TensorFlow runs a large op on a pool of ``intra_op_parallelism_threads`` (one per core by
default). The binary protocols' compiled epoch loops are thousands of small steps (Coat, MF:
about 100 epochs of 54 batches of 128 pairs for 20 replicas), where handing each op's pieces to
the pool and waiting for them costs more than it saves: with one thread per op, ``atrec train
--protocol binary-icde24 --params reference --dataset coat --seeds 20`` took 15-30% less CPU and
less wall time (MF 8-10 -> 6.4-6.9 s of CPU, DR-JL 14-15 -> 12-13 s; docs/performance.md). The
1-5 star protocols keep the pool: AT's products over 15.4 M pairs use both cores (Coat's MF-IPS
and AT, 20 seeds, were 2-3 s slower in wall time with one thread).

The threads an op uses changed no number where it was measured: 32 records of 16 binary
methods under both binary protocols, and Coat's saito2020 records, were bit-identical with one
thread and with two; ``tests/test_threads.py`` keeps IPS so.

TensorFlow reads the setting once, when its first op runs, and refuses a change after that; a
process that has already run ops (say a 1-5 star run before a binary one) keeps what it has.
A value the user set (``TF_NUM_INTRAOP_THREADS``) is never overridden.
"""

from __future__ import annotations

import os

USER_SETTING = "TF_NUM_INTRAOP_THREADS"


def one_thread_per_op() -> bool:
    """Ask for one intra-op thread; ``True`` when this process now has it (set now or
    before), ``False`` when the user chose a value or TensorFlow had already started."""
    if os.environ.get(USER_SETTING):
        return False
    from atrec.runtime.tfquiet import import_tensorflow

    threading = import_tensorflow().config.threading
    if threading.get_intra_op_parallelism_threads() == 1:
        return True
    try:
        threading.set_intra_op_parallelism_threads(1)
    except RuntimeError:   # the context is initialised: the pool stays as it is
        return False
    return True
