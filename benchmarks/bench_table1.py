"""The whole of Table 1, end to end, as a user runs it: wall time, peak RSS, ratio to the authors.

    python benchmarks/bench_table1.py        # one run
    python benchmarks/bench_table1.py 3      # three runs, each on a fresh results folder
    python benchmarks/bench_table1.py 2 --keep   # keep the data, cache and results folders

What runs: ``atrec train --dataset yahoo,coat --propensity all --with-at --without-at --seeds 20``
(24 configurations, 20 seeds each, the published parameters), in a child process, exactly the
command of the README. Coat is the real file from ``../shared/data``; Yahoo! R3 cannot be shipped
(its licence), so Yahoo-size synthetic data stand in for it (:data:`atrec.data.synthetic.YAHOO_SIZE`:
Yahoo's users, items, ratings and test size, its rating skew and a log-normal popularity), written
as the processed ``yahoo`` store of a temporary data folder, so the command trains it with the
published Yahoo parameters of every configuration.

The runs share one compilation cache folder (:mod:`atrec.runtime.compilecache`), new for each
invocation: the first run starts with it empty (a user's first run: every loop compiled), the
later runs load the loops the first one kept (a user's later runs). Each row says which.

Printed per run: the wall time, the peak RSS of the process (``os.wait4``: the
largest resident set of that child), the speed-up over the authors' code on the same
2-core machine, 4,402 s for the whole table (issue 15: 371 s Coat, 307 s Yahoo without AT,
3,724 s Yahoo with AT), and how busy the cores were (the child's CPU seconds over wall time x
cores): the share left idle is all that better overlap of the same work could still win. The
targets are printed beside them: 220 s (20x) and 1 GB. The header names the CPU, since the same
run takes 2.5 times as long on one 2-core machine kind as on another (``docs/performance.md``).
Figures are printed, never asserted. Where TensorFlow sees a GPU, the run uses it, and the
device is named.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from _shared import ChildRun, install_datasets, machine, run_child, scratch_folders

AUTHORS_TABLE1_S = 4402.0          # issue 15: the authors' code, same 2-core machine
TARGET_S, TARGET_MB = 220.0, 1024.0
COMMAND = ["train", "--dataset", "yahoo,coat", "--propensity", "all", "--with-at",
           "--without-at", "--seeds", "20", "--quiet"]


def device() -> str:
    code = ("import tensorflow as tf; g = tf.config.list_physical_devices('GPU'); "
            "print(g[0].name if g else 'CPU only')")
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True,
                         text=True)
    return out.stdout.strip() or "unknown"


def one_run(data_dir: Path, cache_dir: Path, results_dir: Path) -> ChildRun:
    """One Table-1 run into the empty ``results_dir``, with the compilation cache in
    ``cache_dir``: what :func:`_shared.run_child` measured of it."""
    env = dict(os.environ, ATREC_DATA_DIR=str(data_dir), ATREC_COMPILE_CACHE=str(cache_dir),
               ATREC_RESULTS_DIR=str(results_dir))
    run = run_child([sys.executable, "-m", "atrec", *COMMAND], env)
    if run.code:
        raise SystemExit(f"the Table-1 run failed (exit {run.code})")
    return run


def main(args: list[str]) -> None:
    keep = "--keep" in args
    counts = [a for a in args if a != "--keep"]
    runs = int(counts[0]) if counts else 1
    with scratch_folders("atrec-bench-t1", keep) as new:
        data_dir = new("data")
        install_datasets(data_dir, ["coat"])
        print(f"Table 1 end to end: atrec {' '.join(COMMAND)}")
        print(f"(real Coat, Yahoo-size synthetic data; {machine()}; device: {device()})")
        cache_dir = new("xla")
        for k in range(runs):
            run = one_run(data_dir, cache_dir, new(f"results{k + 1}"))
            cache = "empty cache" if k == 0 else "warm cache "
            busy = run.cpu_s / (run.wall * (os.cpu_count() or 1))
            print(f"run {k + 1} ({cache}): {run.wall:6.1f} s  peak RSS {run.peak_mb:5.0f} MB  "
                  f"x{AUTHORS_TABLE1_S / run.wall:4.1f} vs the authors' {AUTHORS_TABLE1_S:.0f} s  "
                  f"cores busy {busy:4.0%}  (targets: {TARGET_S:.0f} s, {TARGET_MB:.0f} MB)",
                  flush=True)

if __name__ == "__main__":
    main(sys.argv[1:])
