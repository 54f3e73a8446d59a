"""The least CPU that 20 seeds of the binary protocol's MF can take at Yahoo's size, set by the
dense Adam update alone, beside the 20x target against the reference script.

    python benchmarks/bench_adam_floor.py

The reference code trains with PyTorch's Adam and coupled weight decay, so every row of every
table gets a gradient (``wd * p``) and moves at every step, whichever pairs the batch holds.
atrec keeps that update (``atrec.learners.epochs.torch_adam``): each step reads and writes the
parameters and both moments of the whole tables, at least 24 bytes per parameter. Batching
seeds does not share it: each replica has its own tables. So this benchmark:

1. trains ``SEEDS_RUN`` seeds of ``atrec train --protocol binary-icde24 --params reference
   --method mf --dataset yahoo`` on the Yahoo-size synthetic data, and reads from the records
   the epochs each seed ran, the batch size and the tables' sizes;
2. times the update alone in a compiled loop: one replica of MF's two tables, as the runner
   lays them out at that size, its gradient zero so that nothing but the update's own reads
   and writes is left, one thread, as atrec trains;
3. prints the floor, ``20 seeds x steps per seed x the update's CPU per step`` (the trained
   seeds' mean steps standing for the 20's: at these values each of the 20 seeds runs 15
   epochs), the 2-seed command's own CPU beside it, and, with ``ATREC_REFERENCE_CODE`` set
   (``reference_code.py``), ``MF.py``'s CPU per run on the same data: the 20x target is 20
   seeds in the CPU of one script run, so the floor bounds the speed-up at ``script / floor x
   20``.

Figures to read, never asserted (docs/performance.md, "Current figures").
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import reference_code
from _shared import install_yahoo_size, machine, run_child, scratch_folders

from atrec.protocols.binary import BinaryICDE24

PROTOCOL = BinaryICDE24.name

SEEDS = 20          # the protocol's seeds, as the target counts them
SEEDS_RUN = 2       # seeds trained to read the epochs per seed (one group of the runner)
STEPS_TIMED = 200   # steps of the update-only loop that are timed


def _records(results: Path) -> list[dict]:
    """The run's records, read as the reports read them."""
    from atrec.protocols.registry import get_protocol
    from atrec.results.records import iter_records

    return list(iter_records(get_protocol(PROTOCOL).results_root(results), "yahoo"))


def update_cpu_per_step(tables: list[tuple[int, int]], lr: float, wd: float) -> float:
    """CPU seconds of one dense Adam step on one replica of ``tables`` (``[(rows, dim)]``),
    measured over :data:`STEPS_TIMED` steps of a compiled loop after a first, compiling call."""
    from atrec.learners.epochs import torch_adam
    from atrec.runtime import tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    params = [tf.random.normal([1, rows, dim], stddev=0.1, seed=1) for rows, dim in tables]

    @tf.function(jit_compile=True, autograph=False)
    def loop(params):
        def body(i, ps, ms, vs):
            t = tf.fill([1], tf.cast(i + 1, tf.float32))
            out = [torch_adam(p, m, v, tf.zeros_like(p), t, lr, wd)
                   for p, m, v in zip(ps, ms, vs)]
            return i + 1, [o[0] for o in out], [o[1] for o in out], [o[2] for o in out]
        zeros = [tf.zeros_like(p) for p in params]
        return tf.while_loop(lambda i, *_: i < STEPS_TIMED, body,
                             (0, params, zeros, list(zeros)))[1]

    loop(params)[0].numpy()
    start = time.process_time()
    loop(params)[0].numpy()
    return (time.process_time() - start) / STEPS_TIMED


def main() -> int:
    message = reference_code.problem()
    if message:
        print(message, file=sys.stderr)
        return 1
    print(f"MF, {PROTOCOL} --params reference, Yahoo-size data, on {machine()}")
    with scratch_folders("atrec-bench-adam-floor") as new:
        os.environ["ATREC_DATA_DIR"] = str(new("data"))
        install_yahoo_size()
        results = new("results")
        argv = [sys.executable, "-m", "atrec", "train", "--protocol", PROTOCOL,
                "--params", "reference", "--method", "mf", "--dataset", "yahoo",
                "--seeds", str(SEEDS_RUN), "--quiet", "--without-at"]
        run = run_child(argv, dict(os.environ, ATREC_RESULTS_DIR=str(results)))
        records = _records(results) if not run.code else []
    if run.code or len(records) != SEEDS_RUN:
        print(f"the {SEEDS_RUN}-seed run failed (exit {run.code}, {len(records)} records): run "
              f"`atrec {' '.join(argv[3:-1])}` with Yahoo-size data installed to see why",
              file=sys.stderr)
        return 1
    params, protocol = records[0]["params"], records[0]["protocol"]
    dim, batch = params["dim"], params["batch_size"]
    steps_per_epoch = protocol["n_train"] // batch
    epochs = [len(r["trace"]["train_loss"]) for r in records]
    steps = steps_per_epoch * sum(epochs) / len(epochs)
    tables = [(protocol["num_users"], dim), (protocol["num_items"], dim)]
    per_step = update_cpu_per_step(tables, params["lr"], params["lam"])
    floor = SEEDS * steps * per_step
    size = sum(rows * d for rows, d in tables)
    print(f"  tables {tables[0][0]:,} + {tables[1][0]:,} rows x dim {dim} ({size:,} parameters"
          f" per replica); {steps_per_epoch} steps per epoch, epochs per seed {epochs}")
    print(f"  dense Adam alone: {per_step * 1e3:.2f} ms CPU per replica and step "
          f"({size * 24 / per_step / 1e9:.1f} GB/s at 24 bytes per parameter)")
    print(f"  floor for {SEEDS} seeds: {SEEDS} x {steps:,.0f} steps x {per_step * 1e3:.2f} ms "
          f"= {floor:.1f} s CPU (atrec's whole {SEEDS_RUN}-seed command, start-up included: "
          f"{run.cpu_s:.1f} s CPU)")
    measured = reference_code.cpu_per_run("mf", "yahoo")
    if isinstance(measured, str):
        print(f"  reference code: no figure, {measured}")
    elif measured is not None:
        cpu, script = measured
        mean = sum(cpu) / len(cpu)
        print(f"  {script} here: {mean:.1f} s CPU per run (mean of {len(cpu)}): 20x asks "
              f"{SEEDS} seeds in {mean:.1f} s; the floor allows at most "
              f"{mean * SEEDS / floor:.1f}x")
    else:
        print(f"  20x asks {SEEDS} seeds in the CPU of one run of MF.py (set "
              f"ATREC_REFERENCE_CODE to time it here)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
